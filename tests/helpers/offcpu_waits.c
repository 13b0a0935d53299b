// SPDX-License-Identifier: Apache-2.0
/* Known off-CPU waits for the off-CPU tests and benchmark. Modes:
 *   split THREADS SECONDS  each thread loops: wait_in_sleep() (nanosleep ~7 ms), then
 *                          wait_in_read() (read from a pipe a child answers ~3 ms later;
 *                          OFFCPU_WAITS_SLEEP_US / OFFCPU_WAITS_READ_US change the two);
 *                          prints the time each function blocked and, per thread, wall,
 *                          CPU and run-queue delay from /proc/thread-self/schedstat.
 *   mutex THREADS SECONDS  threads fight over one pthread mutex in contend_lock().
 *   pingpong RATE SECONDS  two threads bounce a byte over two pipes, RATE round trips/s
 *                          (two blocking switches each), for the benchmark.
 * Every mode waits for a line on stdin before it starts ("go"), so a recorder can attach
 * first, and prints "ready" when it waits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16

struct worker {
	pthread_t thread;
	int req[2], resp[2]; /* to and from the answering child */
	double sleep_s, read_s;
	unsigned long long wall_ns, cpu_ns, delay_ns;
};

static struct worker workers[MAX_THREADS];
static double run_seconds;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long long sink;
static long sleep_wait_us = 7000, read_wait_us = 3000; /* split mode's two waits */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* sum_exec_runtime and run_delay of the calling thread, in ns. */
static void thread_schedstat(unsigned long long *cpu, unsigned long long *delay)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	*cpu = *delay = 0;
	if (!f)
		return;
	if (fscanf(f, "%llu %llu", cpu, delay) != 2)
		*cpu = *delay = 0;
	fclose(f);
}

__attribute__((noinline)) void wait_in_sleep(struct worker *w)
{
	double t = now_s();

	sleep_us(sleep_wait_us);
	w->sleep_s += now_s() - t;
}

__attribute__((noinline)) void wait_in_read(struct worker *w)
{
	double t = now_s();
	char c = 0;

	if (write(w->req[1], &c, 1) != 1 || read(w->resp[0], &c, 1) != 1)
		exit(3);
	w->read_s += now_s() - t;
}

/* The answering child: 3 ms after each request, one byte back. */
static void answer(struct worker *w)
{
	char c;

	/* EOF on the request pipe when the parent exits; stdout is the parent's alone */
	close(w->req[1]);
	close(w->resp[0]);
	fclose(stdout);

	while (read(w->req[0], &c, 1) == 1) {
		sleep_us(read_wait_us);
		if (write(w->resp[1], &c, 1) != 1)
			break;
	}
	_exit(0);
}

static void *split_thread(void *arg)
{
	struct worker *w = arg;
	unsigned long long cpu0, delay0, cpu1, delay1;
	double start = now_s(), end = start + run_seconds;

	thread_schedstat(&cpu0, &delay0);
	while (now_s() < end) {
		wait_in_sleep(w);
		wait_in_read(w);
	}
	thread_schedstat(&cpu1, &delay1);
	w->wall_ns = (unsigned long long)((now_s() - start) * 1e9);
	w->cpu_ns = cpu1 - cpu0;
	w->delay_ns = delay1 - delay0;
	return NULL;
}

__attribute__((noinline)) void contend_lock(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 200000; i++) /* ~0.2 ms held */
		sink += i;
	pthread_mutex_unlock(&lock);
}

static void *mutex_thread(void *arg)
{
	double end = now_s() + run_seconds;

	while (now_s() < end)
		contend_lock();
	return NULL;
}

static int ping[2], pong[2];
static long round_trips;

__attribute__((noinline)) void bounce(int in, int out, long gap_us)
{
	char c = 0;

	for (long i = 0; i < round_trips; i++) {
		if (in >= 0 && read(in, &c, 1) != 1)
			return;
		if (gap_us)
			sleep_us(gap_us);
		if (write(out, &c, 1) != 1)
			return;
		if (in < 0 && read(pong[0], &c, 1) != 1)
			return;
	}
}

static void *pong_thread(void *arg)
{
	bounce(ping[0], pong[1], 0);
	return NULL;
}

static void wait_go(void)
{
	char line[16];

	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(2);
}

static int run_split(int n)
{
	double sleep_s = 0, read_s = 0;
	unsigned long long wall = 0, cpu = 0, delay = 0;

	for (int i = 0; i < n; i++) {
		if (pipe(workers[i].req) || pipe(workers[i].resp))
			return 1;
		if (fork() == 0)
			answer(&workers[i]);
	}
	wait_go();
	for (int i = 1; i < n; i++)
		pthread_create(&workers[i].thread, NULL, split_thread, &workers[i]);
	split_thread(&workers[0]); /* the main thread works too: no thread waits in join */
	for (int i = 1; i < n; i++)
		pthread_join(workers[i].thread, NULL);
	for (int i = 0; i < n; i++) {
		sleep_s += workers[i].sleep_s;
		read_s += workers[i].read_s;
		wall += workers[i].wall_ns;
		cpu += workers[i].cpu_ns;
		delay += workers[i].delay_ns;
	}
	printf("wait_in_sleep %.6f\nwait_in_read %.6f\nwall_ns %llu\ncpu_ns %llu\ndelay_ns %llu\n",
	       sleep_s, read_s, wall, cpu, delay);
	fflush(stdout);
	return 0;
}

static int run_mutex(int n)
{
	wait_go();
	for (int i = 1; i < n; i++)
		pthread_create(&workers[i].thread, NULL, mutex_thread, NULL);
	mutex_thread(NULL);
	for (int i = 1; i < n; i++)
		pthread_join(workers[i].thread, NULL);
	printf("done\n");
	return 0;
}

/* RATE round trips per second: the ping side paces itself by sleeping between trips only
 * when it runs ahead. */
static int run_pingpong(long rate)
{
	pthread_t t;

	if (pipe(ping) || pipe(pong))
		return 1;
	round_trips = (long)(rate * run_seconds);
	wait_go();
	pthread_create(&t, NULL, pong_thread, NULL);
	{
		double start = now_s();
		char c = 0;

		for (long i = 0; i < round_trips; i++) {
			double due = start + (double)i / rate, ahead = due - now_s();

			if (ahead > 0.0005)
				sleep_us((long)(ahead * 1e6));
			if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
				break;
		}
	}
	close(ping[1]);
	pthread_join(t, NULL);
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	int n;

	if (argc != 4) {
		fprintf(stderr, "usage: offcpu_waits split|mutex THREADS SECONDS | pingpong RATE "
				"SECONDS\n");
		return 2;
	}
	n = atoi(argv[2]);
	run_seconds = atof(argv[3]);
	if (getenv("OFFCPU_WAITS_SLEEP_US"))
		sleep_wait_us = atol(getenv("OFFCPU_WAITS_SLEEP_US"));
	if (getenv("OFFCPU_WAITS_READ_US"))
		read_wait_us = atol(getenv("OFFCPU_WAITS_READ_US"));
	if (!strcmp(argv[1], "pingpong"))
		return run_pingpong(n);
	if (n < 1 || n > MAX_THREADS)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "split"))
		return run_split(n);
	if (!strcmp(argv[1], "mutex"))
		return run_mutex(n);
	return 2;
}
