/*
 * cpiflame_markers.h: count perf events around regions of a program's own code, and keep
 * per-region statistics (count, mean, stddev, min, p50/p90/p99, max of the elapsed ns and of
 * every event). The C ABI of cpiflame's marker library (crates/markers-c).
 *
 * Install and link (docs/markers.md):
 *   scripts/install-markers-c.sh --prefix /usr/local
 *   cc app.c $(pkg-config --cflags --libs cpiflame_markers)          # shared
 *   cc app.c $(pkg-config --cflags --libs --static cpiflame_markers) # with -static-libs
 *
 * The model is the Rust API's (cpiflame_markers::Markers):
 *   - a handle counts the events it was opened with on the calling thread, and is used on
 *     that thread only (another thread: CPIFLAME_MARKERS_ETHREAD); open one per thread and
 *     add their results up with cpiflame_markers_collect;
 *   - register a region's name once, then start/stop it by id on the hot path (by-name calls
 *     look the name up per call);
 *   - every call returns CPIFLAME_MARKERS_OK (0) or a negative code, and
 *     cpiflame_markers_last_error() says what went wrong, in words. Nothing aborts, nothing
 *     unwinds into the caller.
 *
 * Example (the per-pixel pattern):
 *
 *   cpiflame_markers_t m;
 *   cpiflame_region_t pixel;
 *   if (cpiflame_markers_open("task-clock,page-faults", &m) != CPIFLAME_MARKERS_OK) {
 *       fprintf(stderr, "%s\n", cpiflame_markers_last_error());
 *       return 1;
 *   }
 *   cpiflame_markers_register(m, "pixel", &pixel);
 *   for (...) {
 *       cpiflame_markers_start(m, pixel);
 *       shade(x, y);
 *       cpiflame_markers_stop(m, pixel);
 *   }
 *   cpiflame_markers_write_report(m, CPIFLAME_MARKERS_TEXT, 1);
 *   cpiflame_markers_close(m);
 */
#ifndef CPIFLAME_MARKERS_H
#define CPIFLAME_MARKERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A handle: a number the library looks up, never a pointer (0 is never a handle). */
typedef uint64_t cpiflame_markers_t;
/* A region of one handle: 0, 1, ... in the order they were registered. */
typedef uint32_t cpiflame_region_t;

/* Return codes. */
#define CPIFLAME_MARKERS_OK 0
#define CPIFLAME_MARKERS_EINVAL (-1)      /* NULL pointer, text not UTF-8, unknown format */
#define CPIFLAME_MARKERS_EOPEN (-2)       /* the events do not parse or do not open */
#define CPIFLAME_MARKERS_EHANDLE (-3)     /* not an open handle: never opened, or closed */
#define CPIFLAME_MARKERS_ETHREAD (-4)     /* a handle opened on another thread */
#define CPIFLAME_MARKERS_EREGION (-5)     /* a region id this handle never registered */
#define CPIFLAME_MARKERS_ENOTRUNNING (-6) /* stop of a region that is not running (ignored) */
#define CPIFLAME_MARKERS_EREAD (-7)       /* reading the counters failed: nothing recorded */
#define CPIFLAME_MARKERS_ESPACE (-8)      /* buffer too small: *needed has the size */
#define CPIFLAME_MARKERS_EIO (-9)         /* writing the report failed */
#define CPIFLAME_MARKERS_EMERGE (-10)     /* results of different events cannot be added */
#define CPIFLAME_MARKERS_ENODATA (-11)    /* nothing collected yet */
#define CPIFLAME_MARKERS_EBUSY (-12)      /* re-entrant call (signal handler) or thread exit */
#define CPIFLAME_MARKERS_EPANIC (-13)     /* a bug in the library, caught at the boundary */

/* Report formats. */
#define CPIFLAME_MARKERS_TEXT 0 /* the table: a row per metric, count avg stddev min p50 p90 p99 max */
#define CPIFLAME_MARKERS_JSON 1 /* schema "cpiflame-markers/1" (docs/markers.md) */

/* One metric ("ns" or an event) of one region; NaN where there is no value. */
typedef struct cpiflame_markers_metric {
	uint64_t samples;     /* completed start/stop pairs of the region */
	uint64_t count;       /* values recorded for this metric */
	uint64_t not_counted; /* samples in which the event did not run (multiplexed out) */
	uint64_t scaled;      /* samples scaled for multiplexing */
	uint64_t total;       /* sum of the values: exact (saturating at UINT64_MAX) */
	double mean, stddev, min, p50, p90, p99, max;
} cpiflame_markers_metric_t;

/* Opens counters of `events` (perf-style specs, comma-separated, e.g. "task-clock,page-faults"
 * or "instructions,cycles"; NULL: instructions, cycles, branches, branch-misses, else where no
 * hardware event opens task-clock, page-faults, context-switches) on the calling thread. */
int cpiflame_markers_open(const char *events, cpiflame_markers_t *out);
/* Closes the handle and its counters (its statistics go unless collected first). */
int cpiflame_markers_close(cpiflame_markers_t m);

/* The id of region `name`, registering it on first use. */
int cpiflame_markers_register(cpiflame_markers_t m, const char *name, cpiflame_region_t *out);
/* Start: reads the counters, then the clock. A start of a running region restarts it
 * (CPIFLAME_MARKERS_OK; counted as a restart in the report). */
int cpiflame_markers_start(cpiflame_markers_t m, cpiflame_region_t region);
/* Stop: reads the clock, then the counters, and adds the region's deltas to its statistics.
 * A stop of a region not running: CPIFLAME_MARKERS_ENOTRUNNING (counted, ignored). */
int cpiflame_markers_stop(cpiflame_markers_t m, cpiflame_region_t region);
/* Lap: ends the region and starts it again from the same reading (one read per region for
 * back-to-back regions: call it before each pixel, and stop after the last). */
int cpiflame_markers_lap(cpiflame_markers_t m, cpiflame_region_t region);
/* The same by name (looked up per call; register once for hot paths). */
int cpiflame_markers_start_named(cpiflame_markers_t m, const char *name);
int cpiflame_markers_stop_named(cpiflame_markers_t m, const char *name);
int cpiflame_markers_lap_named(cpiflame_markers_t m, const char *name);
/* Forgets every region's statistics (regions stay registered, running ones running). */
int cpiflame_markers_reset(cpiflame_markers_t m);

/* The numbers of `metric` ("ns" or an event name as in the report) of `region`. */
int cpiflame_markers_metric(cpiflame_markers_t m, cpiflame_region_t region, const char *metric,
			    cpiflame_markers_metric_t *out);
/* The report, snprintf-style: at most size-1 bytes and a NUL into buf, *needed = the full
 * length + 1 (needed may be NULL); CPIFLAME_MARKERS_ESPACE when cut. buf NULL and size 0:
 * only the size. */
int cpiflame_markers_report(cpiflame_markers_t m, int format, char *buf, size_t size,
			    size_t *needed);
/* Writes the report to file descriptor fd (1: stdout, 2: stderr); fd stays open. */
int cpiflame_markers_write_report(cpiflame_markers_t m, int format, int fd);

/* Threads: adds this handle's statistics to the process's totals (by region name; every
 * handle collected must count the same events) and resets the handle's. Any thread may then
 * report the totals. */
int cpiflame_markers_collect(cpiflame_markers_t m);
int cpiflame_markers_collected_report(int format, char *buf, size_t size, size_t *needed);
int cpiflame_markers_collected_write_report(int format, int fd);

/* The message of the last failing call on this thread ("" if none); valid until the next
 * failing call on this thread. Never NULL. */
const char *cpiflame_markers_last_error(void);
/* A code's name and meaning (a static string). */
const char *cpiflame_markers_strerror(int code);

/* LIKWID-style calls, one implicit handle per thread, opened on first use with the events of
 * the environment variable CPIFLAME_MARKERS_EVENTS (unset: as open(NULL)). A thread's
 * results join the process's totals at cpiflame_marker_thread_close, when the thread exits,
 * or (the calling thread's) at cpiflame_marker_close, which writes the totals' report to
 * $CPIFLAME_MARKERS_OUTPUT (JSON when the name ends in .json), else as a table to stderr.
 * Threads still running at close (an OpenMP pool) are not in it unless they called
 * cpiflame_marker_thread_close. The first failure of these calls is printed on stderr once. */
int cpiflame_marker_init(void);
int cpiflame_marker_register(const char *name);
int cpiflame_marker_start(const char *name);
int cpiflame_marker_stop(const char *name);
int cpiflame_marker_thread_close(void);
int cpiflame_marker_close(void);

/* Drop-in macros, as LIKWID_MARKER_*: CPIFLAME_MARKER_START("pixel"). Define
 * CPIFLAME_MARKERS_DISABLE to compile them to nothing (no library needed then). */
#ifndef CPIFLAME_MARKERS_DISABLE
#define CPIFLAME_MARKER_INIT() ((void)cpiflame_marker_init())
#define CPIFLAME_MARKER_THREADINIT() ((void)cpiflame_marker_init())
#define CPIFLAME_MARKER_REGISTER(name) ((void)cpiflame_marker_register(name))
#define CPIFLAME_MARKER_START(name) ((void)cpiflame_marker_start(name))
#define CPIFLAME_MARKER_STOP(name) ((void)cpiflame_marker_stop(name))
#define CPIFLAME_MARKER_THREADCLOSE() ((void)cpiflame_marker_thread_close())
#define CPIFLAME_MARKER_CLOSE() ((void)cpiflame_marker_close())
#else
#define CPIFLAME_MARKER_INIT() ((void)0)
#define CPIFLAME_MARKER_THREADINIT() ((void)0)
#define CPIFLAME_MARKER_REGISTER(name) ((void)0)
#define CPIFLAME_MARKER_START(name) ((void)0)
#define CPIFLAME_MARKER_STOP(name) ((void)0)
#define CPIFLAME_MARKER_THREADCLOSE() ((void)0)
#define CPIFLAME_MARKER_CLOSE() ((void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* CPIFLAME_MARKERS_H */
