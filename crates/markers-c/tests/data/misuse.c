/* Deliberately wrong call sequences through the C ABI: each must be an error code and a
 * message, never a crash. Prints one line per call: "CALL => CODE | MESSAGE". */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cpiflame_markers.h>

static void show(const char *call, int code)
{
	printf("%s => %d | %s\n", call, code, code ? cpiflame_markers_last_error() : "");
}
#define SHOW(call) show(#call, (call))

static cpiflame_markers_t shared;

static void *other_thread(void *arg)
{
	(void)arg;
	SHOW(cpiflame_markers_start(shared, 0));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *events = argc > 1 ? argv[1] : "task-clock,page-faults,context-switches";
	cpiflame_markers_t m = 0, never = 0;
	cpiflame_region_t r = 0;
	char small[8];
	size_t needed = 0;

	SHOW(cpiflame_markers_open("no-such-event", &never));
	SHOW(cpiflame_markers_open(events, NULL));
	SHOW(cpiflame_markers_open(events, &m));
	SHOW(cpiflame_markers_register(m, "x", &r));
	SHOW(cpiflame_markers_stop(m, r));            /* stop without start */
	SHOW(cpiflame_markers_stop_named(m, "never")); /* stop of a name never started */
	SHOW(cpiflame_markers_start(m, 42));          /* unknown id */
	SHOW(cpiflame_markers_lap(m, 42));
	SHOW(cpiflame_markers_metric(m, 42, "ns", NULL));
	SHOW(cpiflame_markers_start_named(m, NULL));
	SHOW(cpiflame_markers_write_report(m, 7, 1)); /* unknown format */
	SHOW(cpiflame_markers_write_report(m, CPIFLAME_MARKERS_TEXT, -1)); /* bad descriptor */
	SHOW(cpiflame_markers_report(m, CPIFLAME_MARKERS_JSON, small, sizeof small, &needed));
	printf("cut report: '%s' (%zu bytes needed)\n", small, needed);
	SHOW(cpiflame_markers_start(never, 0)); /* never opened: handle 0 */
	SHOW(cpiflame_markers_start(0x123456789abcdefULL, 0)); /* made up */
	shared = m;
	pthread_t t;
	pthread_create(&t, NULL, other_thread, NULL);
	pthread_join(t, NULL);
	SHOW(cpiflame_markers_close(m));
	SHOW(cpiflame_markers_start(m, r)); /* closed handle */
	SHOW(cpiflame_markers_stop(m, r));
	SHOW(cpiflame_markers_close(m));
	SHOW(cpiflame_markers_collected_write_report(CPIFLAME_MARKERS_TEXT, 1)); /* nothing yet */
	printf("strerror(-6): %s\n", cpiflame_markers_strerror(-6));
	printf("done\n");
	return 0;
}
