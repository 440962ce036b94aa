// SPDX-License-Identifier: MIT
/*
 * dlclose() of libslub.so while a thread that allocated through it lives
 * on: the thread's rseq area still names the library's last critical
 * section, and the kernel reads that descriptor at the thread's next
 * preemption or signal. Unmapped, it was a SIGSEGV in a thread that no
 * longer ran any of the library's code (10 runs of 10). The libraries are
 * linked with -z nodelete: dlclose() leaves them mapped.
 *
 *   test_dlclose PATH-TO-libslub.so (or to tests/dlclose_plugin.c's module)
 *
 * This program links neither library; it loads the one it is given.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "slub.h"

static void *(*p_kmalloc)(size_t, gfp_t);
static void (*p_kfree)(const void *);
static volatile int closed, done;
static volatile unsigned long signals;

static void on_usr1(int sig)
{
	(void)sig;
	signals++;
}

static void *user(void *arg)
{
	pthread_barrier_t *ready = arg;

	for (int i = 0; i < 10000; i++) {
		void *p = p_kmalloc(64 + (size_t)(i % 900), GFP_KERNEL);

		if (!p)
			abort();
		p_kfree(p);
	}
	pthread_barrier_wait(ready);
	while (!closed)
		sched_yield();
	/* Preempted and signalled, with the library closed. */
	while (!done)
		sched_yield();
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct timespec ms = { 0, 1000000 };
	pthread_barrier_t ready;
	pthread_t t;
	void *lib;

	if (argc != 2) {
		fprintf(stderr, "usage: test_dlclose PATH-TO-libslub.so\n");
		return 2;
	}
	alarm(60);
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	p_kmalloc = (void *(*)(size_t, gfp_t))dlsym(lib, "kmalloc");
	p_kfree = (void (*)(const void *))dlsym(lib, "kfree");
	if (!p_kmalloc || !p_kfree) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	sigaction(SIGUSR1, &sa, NULL);
	pthread_barrier_init(&ready, NULL, 2);
	pthread_create(&t, NULL, user, &ready);
	pthread_barrier_wait(&ready);
	if (dlclose(lib)) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	closed = 1;
	for (int i = 0; i < 300; i++) {
		pthread_kill(t, SIGUSR1);
		nanosleep(&ms, NULL);
	}
	done = 1;
	pthread_join(t, NULL);
	printf("dlclose: the thread lived through %lu signals\n", signals);
	return signals ? 0 : 1;
}
