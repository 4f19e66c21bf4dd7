/*
 * What one region costs through the C ABI (scripts/bench-markers.sh builds this against the
 * installed library and prints its rows after crates/markers/examples/marker_cost.rs's Rust
 * rows, same events, repetitions and regions per repetition).
 *
 *   marker_cost_c EVENTS REPS ITERS
 *
 * EVENTS "default": the library's default (hardware events, else the software ones), as the
 * Rust rows choose them.
 *
 * Rows, each the median over REPS repetitions of ITERS regions (rows interleaved):
 *   C ABI, start/stop by id     cpiflame_markers_start + cpiflame_markers_stop
 *   C ABI, lap by id            cpiflame_markers_lap
 *   C ABI, start/stop by name   cpiflame_markers_start_named + _stop_named
 *   LIKWID-style macros         CPIFLAME_MARKER_START/STOP (implicit handle, by name)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpiflame_markers.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#define ROWS 4

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: marker_cost_c EVENTS REPS ITERS\n");
		return 2;
	}
	const char *events = strcmp(argv[1], "default") == 0 ? NULL : argv[1];
	int reps = atoi(argv[2]), iters = atoi(argv[3]);
	if (reps < 1 || iters < 1) {
		fprintf(stderr, "marker_cost_c: REPS and ITERS must be positive\n");
		return 2;
	}
	cpiflame_markers_t m;
	cpiflame_region_t r, l;
	if (cpiflame_markers_open(events, &m) || cpiflame_markers_register(m, "r", &r) ||
	    cpiflame_markers_register(m, "l", &l)) {
		fprintf(stderr, "marker_cost_c: %s\n", cpiflame_markers_last_error());
		return 1;
	}
	/* The macros' implicit handle counts the same events. */
	if (events)
		setenv("CPIFLAME_MARKERS_EVENTS", events, 1);
	CPIFLAME_MARKER_INIT();
	const char *names[ROWS] = {"C ABI, start/stop by id", "C ABI, lap by id",
				   "C ABI, start/stop by name", "LIKWID-style macros (by name)"};
	const char *syscalls[ROWS] = {"2", "1", "2", "2"};
	double *times = calloc((size_t)ROWS * reps, sizeof(double));
	if (!times)
		return 1;
	for (int rep = -1; rep < reps; rep++) { /* rep -1: warm-up */
		int n = rep < 0 ? iters / 10 + 1 : iters;
		for (int row = 0; row < ROWS; row++) {
			double t0 = now_ns();
			for (int i = 0; i < n; i++) {
				switch (row) {
				case 0:
					cpiflame_markers_start(m, r);
					cpiflame_markers_stop(m, r);
					break;
				case 1:
					cpiflame_markers_lap(m, l);
					break;
				case 2:
					cpiflame_markers_start_named(m, "n");
					cpiflame_markers_stop_named(m, "n");
					break;
				default:
					CPIFLAME_MARKER_START("x");
					CPIFLAME_MARKER_STOP("x");
				}
			}
			if (rep >= 0)
				times[row * reps + rep] = (now_ns() - t0) / n;
		}
	}
	for (int row = 0; row < ROWS; row++) {
		double *t = times + row * reps;
		qsort(t, reps, sizeof(double), cmp);
		printf("| %s | %s | %.0f | %.0f | %.0f |\n", names[row], syscalls[row],
		       t[(reps - 1) / 2], t[0], t[(int)((reps - 1) * 0.9 + 0.5)]);
	}
	cpiflame_markers_close(m);
	free(times);
	return 0;
}
