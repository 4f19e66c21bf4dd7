/* For tests/integration/record_jit.rs: maps files named as JIT runtimes name their dumps, as
 * they map them (PROT_READ|PROT_EXEC, so the recording gets an MMAP record of each), writes a
 * perf map, and spins so the process has samples.
 *
 *   jit_writer SECONDS [EXISTING|-] [CHILD_SECONDS]
 *
 * In its current directory it writes jit-PID.dump (PID its own) and maps it; maps EXISTING
 * too when given; writes /tmp/perf-PID.map; with CHILD_SECONDS forks a child that writes and
 * maps its own jit-CHILDPID.dump and sleeps that long after its parent has exited. Prints
 * `pid PID` (and `child PID`). Each file holds `PID\n` repeated to 4096 bytes.
 * Built by the test with `cc -O1 -g -o jit_writer jit_writer.c`. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void map_file(const char *path, int create) {
    int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0644);
    if (fd < 0) { perror(path); exit(2); }
    if (create) {
        char line[32], page[4096];
        int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
        for (int i = 0; i < 4096; i++) page[i] = line[i % n];
        if (write(fd, page, sizeof page) != sizeof page) { perror("write"); exit(2); }
    }
    if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    close(fd);
}

static void own_dump(void) {
    char name[64];
    snprintf(name, sizeof name, "jit-%d.dump", (int)getpid());
    map_file(name, 1);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    own_dump();
    if (argc > 2 && strcmp(argv[2], "-") != 0) map_file(argv[2], 0);
    char map[64];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(map, "w");
    if (!f) { perror(map); return 2; }
    fprintf(f, "7f0000001000 40 fake_jit_function\n");
    fclose(f);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    if (argc > 3) {
        pid_t child = fork();
        if (child == 0) {
            own_dump();
            printf("child %d\n", (int)getpid());
            fflush(stdout);
            usleep((useconds_t)(atof(argv[3]) * 1e6));
            _exit(0);
        }
    }
    volatile unsigned long x = 0;
    for (double end = now() + secs; now() < end;)
        for (int i = 0; i < 10000; i++) x += i;
    return 0;
}
