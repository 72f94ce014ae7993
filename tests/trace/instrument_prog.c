/*
 * Built with -finstrument-functions (tests/CMakeLists.txt): a small call
 * tree the tracer records without a single tracing call in it, besides
 * dwt_init and dwt_fini.
 */
#include <stdlib.h>
#include <unistd.h>

#include <dwork/trace.h>

static volatile int sink;

static void __attribute__((noinline)) leaf_short(void)
{
	sink++;
}

static void __attribute__((noinline)) level3(void)
{
	usleep(2000);
	sink++;
}

static void __attribute__((noinline)) level2(void)
{
	level3();
	leaf_short();
}

static void __attribute__((noinline)) level1(void)
{
	level2();
}

int
main(void)
{
	if (dwt_init(NULL) != DW_OK)
		return 1;
	level1();
	for (int i = 0; i < 1000; i++)
		leaf_short();
	dwt_fini();
	return 0;
}
