/*
 * Runs every file of the corpus directories given as arguments through
 * LLVMFuzzerTestOneInput, so a fuzz target's corpus is a regression test
 * with any compiler (no libFuzzer needed).  Exits non-zero when a file
 * cannot be read or a directory holds no file.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX (64u << 20) /* larger corpus files are refused */

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;
	size_t n;

	if (!f || fstat(fileno(f), &st) < 0 || st.st_size > REPLAY_MAX) {
		fprintf(stderr, "%s: cannot read (or too large)\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1); /* +1: never malloc(0) */
	n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!buf || n != (size_t)st.st_size) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int
replay_dir(const char *dir, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(path) < 0)
			rc = -1;
		(*count)++;
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	size_t count = 0;
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (replay_dir(argv[i], &count) < 0)
			rc = 1;
	printf("replayed %zu inputs\n", count);
	if (count == 0) {
		fprintf(stderr, "no corpus file found\n");
		rc = 1;
	}
	return rc;
}
