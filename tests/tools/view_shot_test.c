/*
 * The demo's timeline in a real browser: runs the Mandelbrot demo traced
 * (`dwork run --trace -p 4`), draws its merged trace with `dwork view`,
 * has headless Chromium take one screenshot of the HTML, then decodes
 * the PNG and checks that the picture is not blank: many colours, and
 * plenty of pixels in the colours of Running and Idle.  Skipped (77)
 * when there is no Chromium.  VIEW_SHOT_KEEP=FILE keeps the screenshot
 * (docs/demo-timeline.png is one).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#if defined(DWORK_TOOL_PATH) && defined(MANDELBROT_PATH) &&                    \
    defined(DW_HAVE_ZLIB)
#include <zlib.h>

#define SHOT_W 1200
#define SHOT_H 800

/* ---- PNG: 8-bit RGB or RGBA, not interlaced ------------------------------ */

typedef struct png {
	uint32_t w, h, bpp; /* bytes a pixel */
	unsigned char *px;  /* h rows of w * bpp bytes */
} png;

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int
paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undoes the row filters of the inflated data into img->px. */
static int
unfilter(png *img, const unsigned char *raw)
{
	size_t stride = (size_t)img->w * img->bpp;

	for (uint32_t y = 0; y < img->h; y++) {
		const unsigned char *in = raw + y * (stride + 1) + 1;
		unsigned char *row = img->px + y * stride;
		const unsigned char *up = y ? row - stride : NULL;
		int f = raw[y * (stride + 1)];

		if (f > 4)
			return -1;
		for (size_t i = 0; i < stride; i++) {
			int a = i >= img->bpp ? row[i - img->bpp] : 0;
			int b = up ? up[i] : 0;
			int c = up && i >= img->bpp ? up[i - img->bpp] : 0;
			int pred = f == 0   ? 0
			           : f == 1 ? a
			           : f == 2 ? b
			           : f == 3 ? (a + b) / 2
			                    : paeth(a, b, c);

			row[i] = (unsigned char)(in[i] + pred);
		}
	}
	return 0;
}

static int
png_decode(const unsigned char *buf, size_t n, png *img)
{
	static const unsigned char sig[8] = {0x89, 'P',  'N',  'G',
	                                     '\r', '\n', 0x1a, '\n'};
	unsigned char *idat = NULL, *raw;
	size_t nidat = 0, pos = 8;
	uLongf rawlen;
	int ok = -1;

	memset(img, 0, sizeof *img);
	if (n < 8 || memcmp(buf, sig, 8))
		return -1;
	while (pos + 12 <= n) {
		uint32_t len = be32(buf + pos);
		const unsigned char *type = buf + pos + 4, *d = buf + pos + 8;

		if (len > n - pos - 12)
			break;
		if (!memcmp(type, "IHDR", 4) && len >= 13) {
			img->w = be32(d);
			img->h = be32(d + 4);
			if (d[8] != 8 || (d[9] != 2 && d[9] != 6) ||
			    d[12] != 0) {
				fprintf(stderr,
				        "png: bit depth %u, colour type "
				        "%u, interlace %u: not decoded\n",
				        d[8], d[9], d[12]);
				break;
			}
			img->bpp = d[9] == 2 ? 3 : 4;
		} else if (!memcmp(type, "IDAT", 4)) {
			unsigned char *m = realloc(idat, nidat + len);

			REQUIRE(m != NULL);
			idat = m;
			memcpy(idat + nidat, d, len);
			nidat += len;
		} else if (!memcmp(type, "IEND", 4)) {
			ok = 0;
			break;
		}
		pos += 12 + (size_t)len;
	}
	if (ok || !img->bpp || img->w > 20000 || img->h > 20000) {
		free(idat);
		return -1;
	}
	rawlen = (uLongf)img->h * ((uLongf)img->w * img->bpp + 1);
	raw = malloc(rawlen);
	img->px = malloc((size_t)img->w * img->h * img->bpp);
	REQUIRE(raw && img->px);
	ok = uncompress(raw, &rawlen, idat, nidat) == Z_OK &&
	             rawlen == (uLongf)img->h * ((uLongf)img->w * img->bpp + 1)
	         ? unfilter(img, raw)
	         : -1;
	free(raw);
	free(idat);
	return ok;
}

/* ---- The run ---------------------------------------------------------------
 */

static char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)len)) &&
	    fread(b, 1, (size_t)len, f) == (size_t)len)
		*n = (size_t)len;
	else {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

static const char *
find_chromium(void)
{
	static char path[1024];
	const char *env = getenv("CHROMIUM"), *p = getenv("PATH");
	static const char *const names[] = {"chromium", "chromium-browser"};

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (size_t k = 0; k < 2; k++)
		for (const char *s = p ? p : "/usr/bin"; *s;) {
			size_t len = strcspn(s, ":");

			snprintf(path, sizeof path, "%.*s/%s", (int)len, s,
			         names[k]);
			if (len && access(path, X_OK) == 0)
				return path;
			s += len + (s[len] == ':');
		}
	return NULL;
}

static int
run(const char *cmd)
{
	int st = system(cmd);

	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "failed (%d): %s\n", st, cmd);
		return -1;
	}
	return 0;
}

/* Occurrences of s in doc. */
static size_t
count(const char *doc, const char *s)
{
	size_t k = 0;

	for (const char *p = doc; (p = strstr(p, s)); p += strlen(s))
		k++;
	return k;
}

/* The page as the browser has it after the script ran (--dump-dom):
 * the plot fills the window, the messages are lines with arrowheads and
 * kinds, the runs carry the user's function's name, shown where wide
 * enough, the idle rows are folded behind the toggle. */
static void
check_dom(const char *chromium, const char *dir, const char *html)
{
	char cmd[4096], path[700], want[64];
	size_t n = 0;
	char *dom;

	snprintf(path, sizeof path, "%s/dom.html", dir);
	snprintf(
	    cmd, sizeof cmd,
	    "timeout 90 %s --headless --no-sandbox --disable-gpu "
	    "--disable-quic --no-first-run --disable-background-networking "
	    "--disable-component-update --disable-sync "
	    "--disable-dev-shm-usage --user-data-dir=%s/profile "
	    "--window-size=%d,%d --dump-dom file://%s >%s 2>%s/dom.log",
	    chromium, dir, SHOT_W, SHOT_H, html, path, dir);
	REQUIRE(run(cmd) == 0);
	dom = slurp(path, &n);
	REQUIRE(dom != NULL);
	dom = realloc(dom, n + 1);
	REQUIRE(dom != NULL);
	dom[n] = '\0';
	snprintf(want, sizeof want, "id=\"tl\" width=\"%d\"", SHOT_W);
	CHECK(strstr(dom, want) != NULL);
	CHECK(count(dom, "marker-end=\"url(#a0)\"") >= 10);
	CHECK(count(dom, "marker-end=\"url(#a1)\"") >= 10);
	CHECK(strstr(dom, "<title>call: ") != NULL);
	CHECK(strstr(dom, "<title>result: ") != NULL);
	CHECK(strstr(dom, ">call</text>") && strstr(dom, ">result</text>"));
	CHECK(count(dom, "mandel_tile (remote function run)") >= 10);
	CHECK(count(dom, "visibility=\"visible\">mandel_tile</text>") >= 10);
	CHECK(strstr(dom, "idle the whole range folded: click to show"));
	CHECK(strstr(dom, ">worker 2 executor 1</text>") != NULL);
	CHECK(strstr(dom, ">master</text>") != NULL);
	printf("view_shot: DOM: %zu call arrows, %zu run labels shown\n",
	       count(dom, "marker-end=\"url(#a0)\""),
	       count(dom, "visibility=\"visible\">mandel_tile</text>"));
	free(dom);
}

/* The colours of a picture: how many distinct ones, and how many pixels
 * are of rgb a, of rgb b, and not white. */
static void
colours(const png *img, uint32_t a, uint32_t b, size_t *distinct, size_t *na,
        size_t *nb, size_t *nonwhite)
{
	unsigned char *seen = calloc(1u << 21, 1);

	REQUIRE(seen != NULL);
	*distinct = *na = *nb = *nonwhite = 0;
	for (size_t i = 0; i < (size_t)img->w * img->h; i++) {
		const unsigned char *p = img->px + i * img->bpp;
		uint32_t c = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];

		if (!(seen[c >> 3] & 1u << (c & 7))) {
			seen[c >> 3] |= (unsigned char)(1u << (c & 7));
			(*distinct)++;
		}
		*na += c == a;
		*nb += c == b;
		*nonwhite += c != 0xffffff;
	}
	free(seen);
}

int
main(void)
{
	const char *chromium = find_chromium(),
	           *keep = getenv("VIEW_SHOT_KEEP");
	char dir[512], cmd[4096], shot[600], html[600];
	size_t n = 0, distinct, running, idle, nonwhite, total;
	unsigned char *buf;
	png img;

	if (!chromium) {
		printf("view_shot: skipped: no chromium (apt-get install "
		       "chromium)\n");
		return TEST_SKIP;
	}
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("shot"));
	snprintf(html, sizeof html, "%s/demo.html", dir);
	snprintf(shot, sizeof shot, "%s/shot.png", dir);
	/* The demo as `make demo` runs it, then its picture. */
	snprintf(cmd, sizeof cmd,
	         "cd %s && %s run --trace=demo.trace -p 4 %s -o demo.pgm "
	         ">run.log 2>&1",
	         dir, DWORK_TOOL_PATH, MANDELBROT_PATH);
	REQUIRE(run(cmd) == 0);
	snprintf(cmd, sizeof cmd, "%s view -q %s/demo.trace/trace.prv -o %s",
	         DWORK_TOOL_PATH, dir, html);
	REQUIRE(run(cmd) == 0);
	/* One screenshot, in a fresh profile, with nothing on the network. */
	snprintf(
	    cmd, sizeof cmd,
	    "timeout 90 %s --headless --no-sandbox --disable-gpu "
	    "--disable-quic --no-first-run --disable-background-networking "
	    "--disable-component-update --disable-sync "
	    "--disable-dev-shm-usage --user-data-dir=%s/profile "
	    "--screenshot=%s --window-size=%d,%d file://%s "
	    ">%s/chromium.log 2>&1",
	    chromium, dir, shot, SHOT_W, SHOT_H, html, dir);
	if (run(cmd) != 0) {
		snprintf(cmd, sizeof cmd, "tail -20 %s/chromium.log >&2", dir);
		(void)system(cmd);
		return 1;
	}
	buf = (unsigned char *)slurp(shot, &n);
	REQUIRE(buf != NULL);
	REQUIRE(png_decode(buf, n, &img) == 0);
	CHECK_EQ_U64(img.w, SHOT_W);
	CHECK_EQ_U64(img.h, SHOT_H);
	colours(&img, 0x0000ff, 0x75c3ff, &distinct, &running, &idle,
	        &nonwhite);
	{
		size_t d2, red, black, nw2;

		/* the heads of the result arrows (#d40000) and of the call
		 * arrows (black) */
		colours(&img, 0xd40000, 0x000000, &d2, &red, &black, &nw2);
		printf("view_shot: %zu px of result arrows, %zu px black\n",
		       red, black);
		CHECK(red >= 50);
		CHECK(black >= 100);
	}
	total = (size_t)img.w * img.h;
	printf("view_shot: %zu colours; Running %zu px, Idle %zu px, not "
	       "white %zu of %zu px\n",
	       distinct, running, idle, nonwhite, total);
	/* A blank page has one colour and no pixel of either. */
	CHECK(distinct >= 8);
	CHECK(running >= total / 100); /* the executors' bars */
	CHECK(idle >= total / 100);    /* the idle threads' bars */
	CHECK(nonwhite >= total / 10);
	if (keep && *keep) {
		snprintf(cmd, sizeof cmd, "cp %s %s", shot, keep);
		CHECK(run(cmd) == 0);
	}
	check_dom(chromium, dir, html);
	free(buf);
	free(img.px);
	if (!tu_failures)
		tu_rmtree(dir);
	return tu_report("view_shot");
}

#else

int
main(void)
{
	printf("view_shot: skipped: built without zlib or the demo\n");
	(void)tu_failures;
	return TEST_SKIP;
}

#endif
