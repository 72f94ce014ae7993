/*
 * Typed values read and written by another MessagePack implementation
 * (issue 18: "a standard encoding that a Python or Julia peer can read
 * with its own libraries"): Python's msgpack unpacks what dw_pack wrote,
 * every letter but the references, and packs values that dw_unpack
 * reads; a nil and a map from Python are named in the error.  Skipped,
 * saying so, where /usr/bin/python3 has no msgpack (Debian:
 * python3-msgpack).
 */
#include <dwork/dwork.h>

#include "testutil.h"

#define PY "/usr/bin/python3"

static const char check_py[] =
    "import msgpack, sys\n"
    "v = msgpack.unpackb(open(sys.argv[1], 'rb').read(), raw=False)\n"
    "want = [7, -9000000000, 2.5, 'h\\u00e9llo', b'\\x00\\x01\\xff',\n"
    "        [1.5, -2.0], [1, 2, 3000000000]]\n"
    "assert v == want, v\n"
    "open(sys.argv[2], 'wb').write(msgpack.packb(\n"
    "    [42, 1.25, 'from python', b'xy', [0.5, 1.5], [-1, 2**40]],\n"
    "    use_bin_type=True))\n"
    "open(sys.argv[3], 'wb').write(msgpack.packb([None]))\n"
    "open(sys.argv[4], 'wb').write(msgpack.packb([{'a': 1}]))\n";

static int
write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(b, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

static size_t
read_file(const char *path, char *b, size_t max)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(b, 1, max, f);
	fclose(f);
	return n;
}

static void
check_from_python(const char *d)
{
	char path[700], b[4096];
	snprintf(path, sizeof path, "%s/b.mp", d);
	size_t n = read_file(path, b, sizeof b);
	int i = 0;
	double x = 0, *D = NULL;
	char *s = NULL;
	const void *bin = NULL;
	size_t bn = 0, nd = 0, nl = 0;
	int64_t *L = NULL;
	CHECK(dw_unpack(b, n, "idsbDL", &i, &x, &s, &bin, &bn, &D, &nd, &L,
	                &nl) == DW_OK);
	CHECK(i == 42 && x == 1.25 && s && !strcmp(s, "from python"));
	CHECK(bn == 2 && bin && !memcmp(bin, "xy", 2));
	CHECK(nd == 2 && D && D[0] == 0.5 && D[1] == 1.5);
	CHECK(nl == 2 && L && L[0] == -1 && L[1] == (int64_t)1 << 40);
	free(s), free(D), free(L);
	snprintf(path, sizeof path, "%s/nil.mp", d);
	n = read_file(path, b, sizeof b);
	CHECK(dw_unpack(b, n, "i", &i) == DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "nil") != NULL);
	snprintf(path, sizeof path, "%s/map.mp", d);
	n = read_file(path, b, sizeof b);
	CHECK(dw_unpack(b, n, "i", &i) == DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "map") != NULL);
}

int
main(void)
{
	if (system(PY " -c 'import msgpack' 2>/dev/null") != 0) {
		printf("SKIP typed_peer: " PY " has no msgpack module "
		       "(Debian: python3-msgpack)\n");
		return TEST_SKIP;
	}
	const char *d = tu_tmpdir("peer");
	char a[700], py[700], cmd[4000];
	double D[2] = {1.5, -2.0};
	int64_t L[3] = {1, 2, 3000000000};
	void *buf;
	size_t n;
	REQUIRE(dw_pack(0, &buf, &n, "ildsbDL", 7, (int64_t)-9000000000, 2.5,
	                "h\xc3\xa9llo", "\x00\x01\xff", (size_t)3, D, (size_t)2,
	                L, (size_t)3) == DW_OK);
	snprintf(a, sizeof a, "%s/a.mp", d);
	snprintf(py, sizeof py, "%s/check.py", d);
	REQUIRE(write_file(a, buf, n) == 0);
	REQUIRE(write_file(py, check_py, strlen(check_py)) == 0);
	free(buf);
	snprintf(cmd, sizeof cmd, PY " %s %s %s/b.mp %s/nil.mp %s/map.mp", py,
	         a, d, d, d);
	CHECK(system(cmd) == 0); /* Python read every value */
	check_from_python(d);
	tu_rmtree(d);
	return tu_report("typed_peer");
}
