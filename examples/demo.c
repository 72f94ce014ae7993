/*
 * The demo (until the runtime exists): four threads compute rows of a
 * Mandelbrot set, each row a user function, with events, states and a
 * hand-off of results between threads recorded as communications.  It
 * traces itself and shows where its files went.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <dwork/trace.h>

#define W        640
#define H        480
#define NTHREADS 4
#define EV_ROW   1000
#define EV_ITERS 1001

static unsigned char image[H][W];

static uint64_t __attribute__((noinline)) mandel_row(int y)
{
	dwt_func_enter((const void *)mandel_row);
	uint64_t iters = 0;
	for (int x = 0; x < W; x++) {
		double cr = -2.0 + 3.0 * x / W, ci = -1.2 + 2.4 * y / H;
		double zr = 0, zi = 0;
		int i = 0;
		while (i < 500 && zr * zr + zi * zi < 4.0) {
			double t = zr * zr - zi * zi + cr;
			zi = 2 * zr * zi + ci;
			zr = t;
			i++;
		}
		image[y][x] = (unsigned char)(i == 500 ? 0 : 255 - i % 256);
		iters += (uint64_t)i;
	}
	dwt_func_exit((const void *)mandel_row);
	return iters;
}

static void *
worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof name, "row worker %d", id);
	dwt_set_thread_name(name);
	for (int y = id; y < H; y += NTHREADS) {
		dwt_state_push(DWT_STATE_RUNNING);
		dwt_event(EV_ROW, (uint64_t)y);
		uint64_t it = mandel_row(y);
		dwt_event(EV_ITERS, it);
		dwt_state_pop();
		/* Hand the row to the main thread (thread 0). */
		dwt_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, 0, 0, 1, W,
		         (uint64_t)y);
	}
	return NULL;
}

int
main(void)
{
	if (dwt_init(NULL) != DW_OK)
		return 1;
	dwt_define_type(EV_ROW, "Row computed");
	dwt_define_type(EV_ITERS, "Iterations in the row");
	dwt_set_thread_name("main");
	dwt_state_push(DWT_STATE_SCHEDULING);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	dwt_state_pop();
	dwt_state_push(DWT_STATE_SYNCHRONIZATION);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	dwt_state_pop();
	for (int y = 0; y < H; y++)
		dwt_comm(DWT_RECV | DWT_LOGICAL | DWT_PHYSICAL, 0,
		         DWT_THREAD_ANY, 1, W, (uint64_t)y);
	FILE *f = fopen("mandelbrot.pgm", "wb");
	if (f) {
		fprintf(f, "P5\n%d %d\n255\n", W, H);
		fwrite(image, 1, sizeof image, f);
		fclose(f);
	}
	dwt_stats st;
	dwt_get_stats(&st);
	printf("demo: %d rows on %d threads, image in mandelbrot.pgm\n", H,
	       NTHREADS);
	printf("demo: %" PRIu64 " records from %u threads, %" PRIu64
	       " lost, trace files in %s/\n",
	       st.records, st.threads, st.lost_disk + st.lost_cap, dwt_dir());
	dwt_fini();
	return 0;
}
