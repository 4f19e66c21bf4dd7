/* For tests/integration/record_clock.rs: prints CLOCK_MONOTONIC and CLOCK_REALTIME (ns)
 * when it starts spinning and when it stops, spinning in spin() for argv[1] seconds
 * between the two reads. Built by the test with `cc -O1 -g -o clock_span clock_span.c`. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__attribute__((noinline)) static unsigned long long spin(unsigned long long until) {
    volatile unsigned long long x = 0;
    while (ns(CLOCK_MONOTONIC) < until) {
        for (int i = 0; i < 1000; i++) x += i;
    }
    return x;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    unsigned long long start = ns(CLOCK_MONOTONIC), start_wall = ns(CLOCK_REALTIME);
    spin(start + (unsigned long long)(secs * 1e9));
    unsigned long long end = ns(CLOCK_MONOTONIC), end_wall = ns(CLOCK_REALTIME);
    printf("start %llu %llu\nend %llu %llu\n", start, start_wall, end, end_wall);
    return 0;
}
