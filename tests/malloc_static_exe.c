// SPDX-License-Identifier: MIT
/*
 * A fully static program (-static) with libslub-malloc.a as its malloc:
 * blocks of every kind, from a second thread too, freed and reallocated,
 * and with -DWITH_FORK a fork whose child allocates. Without fork() the
 * program does not link libc's __register_atfork (its fork() is what
 * brings it in), and the drop-in's own stood in for it: the fork handlers'
 * registration called itself and waited on its own lock before main().
 * It also calls glibc's second names of mallinfo and mallopt: with one
 * the drop-in did not define, ld took libc.a's malloc.o for it and failed
 * on every name the two define. Prints "malloc_static_exe: ok".
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern struct mallinfo2 __libc_mallinfo2(void);
extern int __libc_mallopt(int param, int value);

static const size_t sizes[] = { 1, 100, 1000, 20000, 100000, 1 << 20, 3 << 20, 9 << 20 };
#define NR	(sizeof(sizes) / sizeof(sizes[0]))

/* Hide a size from what the compiler knows about malloc. */
static size_t hide(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

/* Every kind of block, written, grown, checked and freed; 0 if all went well. */
static void *work(void *arg)
{
	unsigned char *p[NR];
	long bad = 0;

	(void)arg;
	for (unsigned int i = 0; i < NR; i++) {
		p[i] = malloc(hide(sizes[i]));
		if (!p[i])
			return (void *)1;
		memset(p[i], (int)i + 1, sizes[i]);
	}
	for (unsigned int i = 0; i < NR; i++) {
		unsigned char *q = realloc(p[i], hide(sizes[i] * 2));

		if (!q)
			return (void *)1;
		bad += q[0] != i + 1 || q[sizes[i] - 1] != i + 1;
		p[i] = q;
	}
	for (unsigned int i = 0; i < NR; i++)
		free(p[i]);
	return (void *)bad;
}

int main(void)
{
	pthread_t t;
	void *ret = (void *)1;
	long bad = (long)work(NULL);

	if (pthread_create(&t, NULL, work, NULL) || pthread_join(t, &ret))
		bad++;
	bad += (long)ret;
#ifdef WITH_FORK
	{
		pid_t pid = fork();
		int status = -1;

		if (!pid)
			_exit(work(NULL) ? 1 : 0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
#endif
	/* A kmalloc class's size: this malloc is libslub's, not libc.a's. */
	{
		void *p = malloc(hide(100));

		bad += malloc_usable_size(p) != 112;
		bad += __libc_mallinfo2().uordblks < 112;
		bad += __libc_mallopt(M_MXFAST, 0) != 1;
		free(p);
	}
	if (bad) {
		fprintf(stderr, "malloc_static_exe: %ld failures\n", bad);
		return 1;
	}
	puts("malloc_static_exe: ok");
	return 0;
}
