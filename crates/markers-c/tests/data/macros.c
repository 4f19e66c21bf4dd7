/* The LIKWID-style macros: threads mark "work" by name; the main thread marks "main".
 * Compiles as C and as C++, and with -DCPIFLAME_MARKERS_DISABLE without the library. */
#include <pthread.h>
#include <stdio.h>

#include <cpiflame_markers.h>

#define THREADS 3
#define ITERS 50

static volatile double sink;

static void *worker(void *arg)
{
	(void)arg;
	CPIFLAME_MARKER_THREADINIT();
	for (int i = 0; i < ITERS; i++) {
		CPIFLAME_MARKER_START("work");
		for (int k = 0; k < 2000; k++)
			sink = sink + k * 0.5;
		CPIFLAME_MARKER_STOP("work");
	}
	return NULL; /* the thread's results join the totals as it exits */
}

int main(void)
{
	CPIFLAME_MARKER_INIT();
	CPIFLAME_MARKER_REGISTER("main");
	CPIFLAME_MARKER_START("main");
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CPIFLAME_MARKER_STOP("main");
	CPIFLAME_MARKER_STOP("main"); /* a stop too many: reported once on stderr */
	CPIFLAME_MARKER_CLOSE();
	printf("done\n");
	return 0;
}
