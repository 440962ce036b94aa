// SPDX-License-Identifier: MIT
/*
 * fork() of a program whose malloc is libslub-malloc, while other threads
 * allocate: the child must find every lock free, whatever the other
 * threads held at the instant of the fork. Workers run malloc, calloc,
 * realloc and free over every kind of block (slab objects, page blocks,
 * mmap'd huge blocks) while the main thread forks NR_FORKS times. Each
 * child, alone in its copy of the process, checks the objects it inherited,
 * frees them, allocates and frees a couple of thousand objects of every
 * kind, and runs the page allocator's consistency check. alarm() turns a
 * deadlock into a failed child.
 *
 * Then vfork(), which the drop-in provides: its children malloc and free
 * in the parent's memory while the workers go on (see src/malloc_vfork.c).
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "helpers.h"
#include "page_alloc.h"
#include "test.h"
#include "checks.h"
#include "malloc_internal.h"
#include "percpu.h"
#include "slub_internal.h"
#include "tagged_obj.h"

#define MiB		(1024UL * 1024)
#define NR_FORKS	200
#define CHILD_TIMEOUT	60	/* seconds before a stuck child is killed (load) */
#define LIVE		64
#define INHERITED	64

static int stop;
static unsigned long worker_ops, worker_errors;

/* Mostly small, some page blocks, a few huge (mmap'd) blocks. */
static size_t pick_size(unsigned long long *rnd, bool huge)
{
	unsigned int r = (unsigned int)(rnd_next(rnd) % 100);

	if (huge)
		return 5 * MiB + (size_t)(rnd_next(rnd) % (3 * MiB));
	if (r < 80)
		return 16 + (size_t)(rnd_next(rnd) % 1024);
	if (r < 97)
		return 1024 + (size_t)(rnd_next(rnd) % 8192);
	return 8192 + (size_t)(rnd_next(rnd) % (1 * MiB));
}

/*
 * Workers 0 and 1 churn huge blocks (their registry lock), the others
 * slab objects and page blocks (the per-CPU locks, list_lock, the pcp
 * lists, zone->lock). realloc stays off huge blocks: test_malloc_api
 * covers those, and this test is about fork.
 */
static void *worker_fn(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	unsigned long long rnd = (id + 1) * 0x9e3779b97f4a7c15ULL;
	struct obj live[LIVE] = { { NULL, 0, 0 } };
	unsigned long ops = 0, errs = 0;
	bool huge = id < 2;

	/*
	 * Nice 19: the workers only have to be somewhere in the allocator
	 * when the fork comes, not to keep the children off the CPUs.
	 */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 19);

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct obj *o = &live[rnd_next(&rnd) % LIVE];
		unsigned int r = (unsigned int)(rnd_next(&rnd) % 4);

		if (o->p) {
			errs += !tagged(o);
			if (r == 0 && !huge) {
				size_t n = pick_size(&rnd, false);
				unsigned long first = o->p[0];
				unsigned long *q = realloc(o->p, n);

				if (!q) {
					errs++;
				} else {
					errs += q[0] != first;
					o->p = q;
					o->size = n;
					tag(o, ops);
				}
			} else {
				free(o->p);
				o->p = NULL;
			}
		} else {
			o->size = pick_size(&rnd, huge);
			o->p = r == 1 ? calloc(1, o->size) : malloc(o->size);
			if (!o->p) {
				errs++;
			} else {
				if (r == 1)
					errs += o->p[0] != 0 ||
						o->p[o->size / sizeof(long) - 1] != 0;
				tag(o, ops);
			}
		}
		if (++ops % 64 == 0)
			__atomic_fetch_add(&worker_ops, 64, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < LIVE; i++) {
		if (live[i].p)
			errs += !tagged(&live[i]);
		free(live[i].p);
	}
	__atomic_fetch_add(&worker_errors, errs, __ATOMIC_RELAXED);
	return NULL;
}

/* Allocated by the forking thread: every child checks and frees them. */
static struct obj inherited[INHERITED];

/*
 * The child: alone, so every lock must be free. The exit status says
 * which step went wrong.
 */
static int child_main(void)
{
	static const size_t sizes[] = {
		16, 24, 100, 256, 1000, 4096, 8192, 20000, 300000, 5 * MiB,
	};
	enum { PER_SIZE = 300 };
	static struct obj o[PER_SIZE];
	unsigned long t = 1;

	for (int i = 0; i < INHERITED; i++)
		if (!tagged(&inherited[i]))
			return 2;
	for (int i = 0; i < INHERITED; i++)
		free(inherited[i].p);
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		int nr = sizes[s] > MiB ? 4 : sizes[s] > 8192 ? 32 : PER_SIZE;

		for (int i = 0; i < nr; i++) {
			o[i].size = sizes[s];
			o[i].p = s & 1 ? calloc(1, sizes[s]) : malloc(sizes[s]);
			if (!o[i].p)
				return 3;
			if ((s & 1) && o[i].p[o[i].size / sizeof(long) - 1])
				return 4;
			tag(&o[i], t++);
		}
		for (int i = 0; i < nr; i++) {
			if (!tagged(&o[i]))
				return 5;
			if (i % 4 == 0) {
				unsigned long *q = realloc(o[i].p, sizes[s] * 2);

				if (!q || q[0] != o[i].tag)
					return 6;
				o[i].p = q;
			}
			free(o[i].p);
		}
	}
	if (page_alloc_check() != 0)
		return 7;
	return 0;
}

/* The workers, going: every one past its first 1,024 operations. */
static struct workers {
	int nr;
	pthread_t *t;
} workers;

static void start_workers(void)
{
	workers.nr = 2 + 2 * nr_cpus_allowed();
	workers.t = calloc((size_t)workers.nr, sizeof(*workers.t));
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&worker_ops, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < workers.nr; i++)
		pthread_create(&workers.t[i], NULL, worker_fn, (void *)(uintptr_t)i);
	while (__atomic_load_n(&worker_ops, __ATOMIC_RELAXED) < 1024UL * workers.nr)
		usleep(1000);
}

static void stop_workers(void)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < workers.nr; i++)
		pthread_join(workers.t[i], NULL);
	free(workers.t);
}

static void test_fork_malloc(void)
{
	unsigned long long rnd = 7;
	int forks, failed = 0;

	for (int i = 0; i < INHERITED; i++) {
		inherited[i].size = pick_size(&rnd, i == 0);
		inherited[i].p = malloc(inherited[i].size);
		tag(&inherited[i], (unsigned long)i + 100);
	}
	/* Fork only once every worker is going. */
	start_workers();
	/* One failure tells the story; a hang costs CHILD_TIMEOUT. */
	for (forks = 0; forks < NR_FORKS && !failed; forks++)
		failed += !check_child(fork_child(child_main, CHILD_TIMEOUT), forks);
	stop_workers();
	fprintf(stderr, "%d forks, %lu worker ops\n", forks, worker_ops);
	CHECK_EQ(worker_errors, 0);
	/* The parent's copies are untouched by what the children did. */
	for (int i = 0; i < INHERITED; i++) {
		CHECK(tagged(&inherited[i]));
		free(inherited[i].p);
	}
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * A vfork child's work: blocks of every kind, tagged, checked, some
 * realloc'd and aligned, all freed; 0 if all was well. It runs in the
 * parent's memory, on a thread whose rseq area the kernel does not update
 * for it, while the workers allocate on every CPU.
 */
static int vfork_child_main(void)
{
	static const size_t sizes[] = { 16, 48, 100, 640, 1024, 4000, 20000, 300000 };
	enum { ROUNDS = 250 };
	struct obj o[ARRAY_SIZE(sizes)];
	unsigned long t = 1;

	alarm(CHILD_TIMEOUT);
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
			o[s].size = sizes[s];
			if (s == 3) {
				void *q = NULL;

				if (posix_memalign(&q, 256, sizes[s]) || (uintptr_t)q % 256)
					return 3;
				o[s].p = q;
			} else {
				o[s].p = r & 1 ? calloc(1, sizes[s]) : malloc(sizes[s]);
			}
			if (!o[s].p)
				return 4;
			tag(&o[s], t++);
		}
		for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
			if (!tagged(&o[s]))
				return 5;
			if (s == 2) {
				unsigned long *q = realloc(o[s].p, 3 * sizes[s]);

				if (!q || q[0] != o[s].tag)
					return 6;
				o[s].p = q;
			}
			free(o[s].p);
		}
	}
	return 0;
}

/*
 * vfork() while the workers churn: nothing the children do may hand a
 * block out twice or break a tag (the fix for this: 1,469 broken tags in
 * 200 children of 2,000 mallocs each, before), and the fast paths are
 * back on once no child runs.
 */
/* fn() in a vfork child, which exits with its result: the wait status, -1 if none. */
static __attribute__((noinline)) int vfork_run(int (*fn)(void))
{
	int status = -1;
	pid_t pid = vfork();

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void test_vfork_malloc(void)
{
	enum { NR_VFORKS = 50 };
	size_t fast_alloc = sheaf_fast_limit.alloc;
	int failed = 0, n;

	start_workers();
	for (n = 0; n < NR_VFORKS && !failed; n++) {
		int status = vfork_run(vfork_child_main);

		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "vfork child %d: status %#x\n", n, status);
			failed++;
		}
	}
	stop_workers();
	fprintf(stderr, "%d vforks, %lu worker ops\n", n, worker_ops);
	CHECK_EQ(failed, 0);
	CHECK_EQ(worker_errors, 0);
	CHECK_EQ(sheaf_fast_limit.alloc, fast_alloc);
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * fork() in one thread while another's vfork child lives: every thread is
 * off the fast paths meanwhile, and the fork child, which has no vfork
 * under way, has them back (it kept the parent's hold, for ever, before).
 */
static int vfork_gate;

static void *vforker(void *arg)
{
	int status;
	pid_t pid;

	(void)arg;
	pid = vfork();
	if (pid == 0) {
		__atomic_store_n(&vfork_gate, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&vfork_gate, __ATOMIC_SEQ_CST) != 2)
			usleep(100);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	return NULL;
}

static void test_fork_during_vfork(void)
{
	size_t fast_alloc = sheaf_fast_limit.alloc;
	int status = -1;
	pthread_t t;
	pid_t pid;

	pthread_create(&t, NULL, vforker, NULL);
	while (!__atomic_load_n(&vfork_gate, __ATOMIC_SEQ_CST))
		usleep(100);
	CHECK_EQ(sheaf_fast_limit.alloc, 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(sheaf_fast_limit.alloc == fast_alloc ? 0 : 1);
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	__atomic_store_n(&vfork_gate, 2, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	CHECK_EQ(sheaf_fast_limit.alloc, fast_alloc);
}

/* A block in the page allocator's arena: a slab's, not the vfork heap's. */
static bool slab_block(const void *p)
{
	return (const char *)p >= zone.arena &&
	       (const char *)p < zone.arena + (zone.nr_pages << SLUB_PAGE_SHIFT);
}

/*
 * A vfork child that vforks stays a vfork child once its own child is
 * gone (its blocks still come from the vfork heap, outside the arena), and
 * vforks nest 16 deep at most, the 17th failing with EAGAIN.
 */
static int nested_level(int level)
{
	void *p;
	pid_t pid;
	int status = -1;

	p = malloc(16);
	if (!p || slab_block(p))
		return 10 + level;
	free(p);
	pid = vfork();
	if (pid == 0)
		_exit(nested_level(level + 1));
	if (pid < 0)
		return level == 16 && errno == EAGAIN ? 0 : 50 + level;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 80;
	if (WEXITSTATUS(status))
		return WEXITSTATUS(status);
	/* The inner child is gone: this one is still a vfork child. */
	p = malloc(16);
	if (!p || slab_block(p))
		return 100 + level;
	free(p);
	return 0;
}

static void test_vfork_nested(void)
{
	int status = -1;
	pid_t pid = vfork();

	if (pid == 0)
		_exit(nested_level(1));
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "nested vfork: status %#x\n", status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A SIGCHLD handler that mallocs, run as the parent wakes from vfork()
 * (before vfork() has returned): it is no vfork child, so its blocks
 * come from the slabs, not from the vfork heap (425 to 983 of
 * 1,000 did, when the mark was cleared only as vfork() returned).
 */
static int sigchld_as_child;

static void on_sigchld(int sig)
{
	void *p = malloc(100);

	(void)sig;
	if (!p || !slab_block(p))
		sigchld_as_child++;
	free(p);
}

/* A child that exits at once; vfork()'s own frame, so a loop's index is not clobbered. */
static __attribute__((noinline)) void vfork_exit_wait(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

static void test_vfork_sigchld(void)
{
	struct sigaction sa = { .sa_handler = on_sigchld }, old;

	sigaction(SIGCHLD, &sa, &old);
	for (int i = 0; i < 300; i++)
		vfork_exit_wait();
	sigaction(SIGCHLD, &old, NULL);
	CHECK_EQ(sigchld_as_child, 0);
}

/*
 * fork() inside a vfork child: the kernel gave the vfork child no rseq
 * registration and fork copies none, so the new process registers its
 * thread again before its fast paths come back (it ran them unregistered,
 * and broke up to 10.8M tags with a second thread, before). rseq(2) on a
 * registered area answers EBUSY; glibc registers 32 bytes at least.
 */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static int fork_in_vfork_child(size_t fast_alloc)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		void *area = NULL;
		unsigned int len = 32;

		/* glibc's area, or (GLIBC_TUNABLES=glibc.pthread.rseq=0) ours. */
		if (fast_alloc && percpu_state.rseq_from_glibc) {
			area = (char *)__builtin_thread_pointer() + __rseq_offset;
			len = __rseq_size > 32 ? __rseq_size : 32;
		} else if (fast_alloc) {
			area = slub_rseq_register_current();
		}
		if (area && syscall(SYS_rseq, area, len, 0, 0x53053053) == 0)
			_exit(1);	/* it had no registration */
		if (sheaf_fast_limit.alloc != fast_alloc)
			fprintf(stderr, "fork child of a vfork child: fast limit %zu, not %zu\n",
				sheaf_fast_limit.alloc, fast_alloc);
		_exit(sheaf_fast_limit.alloc == fast_alloc ? 0 : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 3;
	return WEXITSTATUS(status);
}

static void test_fork_in_vfork_child(void)
{
	size_t fast_alloc = sheaf_fast_limit.alloc;
	int status = -1;
	pid_t pid = vfork();

	if (pid == 0)
		_exit(fork_in_vfork_child(fast_alloc));
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "fork in a vfork child: status %#x\n", status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * vfork() from a signal handler while the thread is inside its own vfork:
 * the handler's hold must not wait on the lock its thread holds (it
 * waited for ever within seconds, before). Each iteration arms a one-shot
 * timer 10-100 us ahead and vforks, so the handler lands anywhere in
 * the thread's own vfork, or just after it, in a child of its own which
 * the test kills if it hangs. One signal an iteration at most: a periodic
 * 200 us timer, on a loaded machine where a vfork took longer than that,
 * ran the handler back to back and starved the loop (one run in six under
 * a parallel test run went past the 30 s).
 */
static volatile sig_atomic_t handled;

static void on_sigalrm(int sig)
{
	(void)sig;
	vfork_exit_wait();
	handled++;
}

#define VFORK_HANDLER_LOOPS	10000

static void test_vfork_in_handler(void)
{
	int status = -1, waited = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_sigalrm, .sa_flags = SA_RESTART };
		unsigned int rnd = 1;

		sigaction(SIGALRM, &sa, NULL);
		for (int i = 0; i < VFORK_HANDLER_LOOPS; i++) {
			struct itimerval once = { { 0, 0 }, { 0, 10 } };

			rnd = rnd * 1103515245 + 12345;
			once.it_value.tv_usec += (rnd >> 16) % 91;
			setitimer(ITIMER_REAL, &once, NULL);
			vfork_exit_wait();
		}
		/* Meaningful only if the handler ran often. */
		if (handled < VFORK_HANDLER_LOOPS / 10)
			fprintf(stderr, "vfork in a handler: %d handlers in %d loops\n",
				(int)handled, VFORK_HANDLER_LOOPS);
		_exit(handled >= VFORK_HANDLER_LOOPS / 10 ? 0 : 3);
	}
	while (pid > 0 && waitpid(pid, &status, WNOHANG) == 0 && waited < 6000) {
		usleep(10000);
		waited++;
	}
	if (waited == 6000) {
		fprintf(stderr, "vfork in a handler: no end after 60 s (deadlocked?)\n");
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A vfork child that vforks and is killed before its own vfork returns
 * leaves its level taken and its hold on the fast paths: the parent,
 * resumed, gives back every level above its own (the fast paths stayed
 * off, and the nesting limit one lower, for the rest of its life).
 */
/*
 * The innermost child kills its parent, and exits, without touching the
 * stack once the kill is sent: the top process wakes at its parent's
 * death and runs on the stack the child shares with it.
 */
static __attribute__((noreturn)) void kill_and_exit(pid_t pid)
{
	__asm__ volatile("syscall\n\t"
			 "movl	%[nr_exit], %%eax\n\t"
			 "xorl	%%edi, %%edi\n\t"
			 "syscall"
			 : : "a"(SYS_kill), "D"(pid), "S"(SIGKILL), [nr_exit] "i"(SYS_exit)
			 : "rcx", "r11", "memory");
	__builtin_unreachable();
}

static int killed_middle(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		kill_and_exit(getppid());	/* the middle child, in vfork() */
	return 0;
}

static void test_vfork_child_killed(void)
{
	size_t fast_alloc = sheaf_fast_limit.alloc;
	int status = vfork_run(killed_middle);

	CHECK(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	CHECK_EQ(malloc_vfork_depth, 0);
	CHECK_EQ(sheaf_fast_limit.alloc, fast_alloc);
}

/*
 * malloc_trim() in a vfork child made by a thread that has not used the
 * allocator yet: in own-rseq mode (glibc's registration off) its flushes
 * registered rseq for the child and marked the parent thread registered,
 * which the kernel then had no registration for. The thread, once it
 * allocates, must hold one: a dummy area's registration must fail.
 */
static void *trim_in_child_thread(void *arg)
{
	static struct { char area[32]; } __attribute__((aligned(32))) dummy;
	int status = -1;
	long r;
	pid_t pid;

	(void)arg;
	pid = vfork();
	if (pid == 0) {
		malloc_trim(0);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	free(malloc(64));	/* the thread's first use of a CPU sheaf */
	r = syscall(SYS_rseq, &dummy, sizeof(dummy), 0, 0x53053053);
	if (r == 0)
		syscall(SYS_rseq, &dummy, sizeof(dummy), 1 /* unregister */, 0x53053053);
	return (void *)(uintptr_t)(r == 0);
}

static void test_vfork_trim_own_rseq(void)
{
	pthread_t t;
	void *unregistered = NULL;

	pthread_create(&t, NULL, trim_in_child_thread, NULL);
	pthread_join(t, &unregistered);
	if (percpu_state.mode == PERCPU_MODE_RSEQ)
		CHECK(!unregistered);
}

/*
 * A vfork child's blocks outlive it, as under glibc, whose children
 * allocate from the parent's heap: 2,000 children each leave 11 strings
 * to the parent and free a twelfth. They cost the parent about what they
 * hold, not a mapping each (89 MB before, glibc 1.1 MB); the parent
 * reallocs and frees them like any other block, and its mapped memory
 * comes back to what it was, but for the chunk being carved.
 */
#define KEEP_CHILDREN	2000
#define KEEP_STRINGS	11

static char *kept[KEEP_CHILDREN][KEEP_STRINGS];
static int keep_child;

static void kept_text(char *buf, size_t n, int child, int j)
{
	snprintf(buf, n, "--option-%d=value-of-child-%d", j, child);
}

static int keep_strings(void)
{
	char buf[64], *gone;

	for (int j = 0; j < KEEP_STRINGS; j++) {
		kept_text(buf, sizeof(buf), keep_child, j);
		kept[keep_child][j] = strdup(buf);
		if (!kept[keep_child][j])
			return 1;
	}
	gone = malloc(100);
	if (!gone)
		return 2;
	free(gone);
	return 0;
}

static void free_it(void *p)
{
	free(p);
}

/* free(p) reports, and the block beside it keeps its text. */
static void check_vheap_bad_free(void *p, const char *what)
{
	char out[2048];

	capture_stderr(free_it, p, out, sizeof(out));
	if (!strstr(out, "BUG: free(): invalid pointer")) {
		fprintf(stderr, "free(%s): report was '%s'\n", what, out);
		CHECK(0);
	}
}

static void test_vfork_blocks_outlive_child(void)
{
	struct malloc_huge_usage before, after, end;
	char buf[64];
	int failed = 0, bad = 0;
	char *p;

	malloc_huge_usage(&before);
	for (keep_child = 0; keep_child < KEEP_CHILDREN; keep_child++) {
		int status = vfork_run(keep_strings);

		failed += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	malloc_huge_usage(&after);
	fprintf(stderr, "%d children's %d strings: %zu KB mapped\n", KEEP_CHILDREN,
		KEEP_CHILDREN * KEEP_STRINGS, (after.bytes - before.bytes) >> 10);
	CHECK_EQ(failed, 0);
	CHECK(after.bytes - before.bytes <= 2 * MiB);
	for (int i = 0; i < KEEP_CHILDREN; i++) {
		for (int j = 0; j < KEEP_STRINGS; j++) {
			kept_text(buf, sizeof(buf), i, j);
			bad += !kept[i][j] || strcmp(kept[i][j], buf) ||
			       malloc_usable_size(kept[i][j]) < strlen(buf) + 1;
		}
	}
	CHECK_EQ(bad, 0);

	/* Grown in the parent, as its setenv() grows a child's environ. */
	p = realloc(kept[0][0], 3000);
	kept_text(buf, sizeof(buf), 0, 0);
	CHECK(p && !strcmp(p, buf));
	kept[0][0] = p;
	p = realloc(kept[0][1], 20000);		/* to the slabs */
	kept_text(buf, sizeof(buf), 0, 1);
	CHECK(p && !strcmp(p, buf));
	kept[0][1] = p;

	/* A double free, and a pointer inside a block: reported, not done. */
	free(kept[1][0]);
	check_vheap_bad_free(kept[1][0], "a child's block, again");
	kept[1][0] = NULL;
	check_vheap_bad_free(kept[1][1] + 8, "inside a child's block");
	kept_text(buf, sizeof(buf), 1, 1);
	CHECK(!strcmp(kept[1][1], buf));

	for (int i = 0; i < KEEP_CHILDREN; i++)
		for (int j = 0; j < KEEP_STRINGS; j++)
			free(kept[i][j]);
	malloc_huge_usage(&end);
	CHECK(end.bytes <= before.bytes + (64UL << 10));
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * setenv() in a vfork child changes the parent's environment, under
 * glibc as here: environ and glibc's own copy of it then point at the
 * child's array, and the parent's next setenv() reallocs it.
 */
static int setenv_in_child(void)
{
	return setenv("SLUB_VFORK_TEST", "set-by-child", 1) ? 1 : 0;
}

static void test_vfork_setenv(void)
{
	int status = vfork_run(setenv_in_child), bad = 0;
	const char *v = getenv("SLUB_VFORK_TEST");
	char name[64];

	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK(v && !strcmp(v, "set-by-child"));
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "SLUB_VFORK_TEST_%d", i);
		bad += setenv(name, name, 1) != 0;
	}
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "SLUB_VFORK_TEST_%d", i);
		v = getenv(name);
		bad += !v || strcmp(v, name);
		bad += unsetenv(name) != 0;
	}
	v = getenv("SLUB_VFORK_TEST");
	CHECK(v && !strcmp(v, "set-by-child"));
	CHECK_EQ(unsetenv("SLUB_VFORK_TEST"), 0);
	CHECK_EQ(bad, 0);
}

/*
 * Fork handlers that malloc, registered before the program's first
 * malloc: the library's own were registered at that first malloc, after
 * these, so their prepare ran after the library had taken its locks and
 * their child and parent before it gave them back, and a malloc there
 * waited for ever (every time, at 5,000 bytes and up). Run as this
 * program's first act, in a process of its own.
 */
static const size_t atfork_sizes[] = { 100, 5000, 20000, 10 * MiB };
static int atfork_stage_failed;

static void atfork_malloc(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(atfork_sizes); i++) {
		char *p = malloc(atfork_sizes[i]);

		if (!p) {
			atfork_stage_failed = 1;
			continue;
		}
		p[0] = p[atfork_sizes[i] - 1] = 1;
		free(p);
	}
}

static int atfork_first(void)
{
	int status = -1;
	pid_t pid;

	alarm(CHILD_TIMEOUT);
	if (pthread_atfork(atfork_malloc, atfork_malloc, atfork_malloc))
		return 2;
	free(malloc(32));
	for (int i = 0; i < 20; i++) {
		pid = fork();
		if (pid == 0)
			_exit(atfork_stage_failed ? 3 : 0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			return 4;
	}
	return atfork_stage_failed ? 5 : 0;
}

static void test_atfork_handlers_first(void)
{
	char *argv[] = { "/proc/self/exe", "atfork-first", NULL };
	char out[4096];
	int status = run_self_env(argv, "SLUB_TEST_ATFORK=1", out, sizeof(out));

	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "atfork-first: status %#x: %s\n", status, out);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Threads whose first call into the drop-in is a free() of another
 * thread's block, or a malloc(), then churn: more threads than CPUs, each
 * moved between them on purpose. With libslub's own rseq registration
 * (the own_rseq run) a new thread is not registered until its first slow
 * path, and its fast paths run on the guard units below CPU 0's, where
 * they must fail, not fault or store. Both registrations run the
 * drop-in's fast paths.
 */
#define FIRST_THREADS	32
#define FIRST_OPS	4000	/* a tenth with SLUB_DEBUG, which backtraces each */

struct first {
	void *inherited;	/* freed first, or NULL: malloc first */
	unsigned int seed;
	unsigned long bad;
};

static void *first_call_thread(void *arg)
{
	struct first *f = arg;
	struct obj o[16] = { 0 };
	unsigned int seed = f->seed;
	int ncpus = nr_cpus_allowed();
	int ops = getenv("SLUB_DEBUG") ? FIRST_OPS / 10 : FIRST_OPS;

	if (f->inherited)
		free(f->inherited);
	for (int i = 0; i < ops; i++) {
		struct obj *x = &o[rand_r(&seed) % 16];

		if (x->p) {
			f->bad += !tagged(x);
			free(x->p);
		}
		x->size = 16 + (size_t)(rand_r(&seed) % 1024) / 8 * 8;
		x->p = malloc(x->size);
		if (!x->p) {
			f->bad++;
			continue;
		}
		tag(x, (unsigned long)i << 8 | seed % 256);
		if (i % 256 == 0 && ncpus > 1)
			migrate_to(rand_r(&seed) % ncpus);
	}
	for (int k = 0; k < 16; k++) {
		if (o[k].p) {
			f->bad += !tagged(&o[k]);
			free(o[k].p);
		}
	}
	return NULL;
}

static void test_first_call_in_new_threads(void)
{
	pthread_t tid[FIRST_THREADS];
	struct first f[FIRST_THREADS];

	free(malloc(1));	/* the library is up */
	if (percpu_rseq() && !READ_ONCE(slub_stats_on))
		CHECK(__atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE) != 0);
	fprintf(stderr, "%s, %s\n", percpu_state.why,
		__atomic_load_n(&sheaf_fast_limit.alloc, __ATOMIC_ACQUIRE) ?
		"drop-in fast paths on" : "drop-in fast paths off");
	for (int i = 0; i < FIRST_THREADS; i++) {
		f[i] = (struct first){
			.inherited = i % 2 ? malloc(16 + 8 * (size_t)i) : NULL,
			.seed = 7919u * (unsigned int)(i + 1),
		};
		CHECK_EQ(pthread_create(&tid[i], NULL, first_call_thread, &f[i]), 0);
	}
	for (int i = 0; i < FIRST_THREADS; i++) {
		pthread_join(tid[i], NULL);
		CHECK_EQ(f[i].bad, 0);
	}
	CHECK_EQ(page_alloc_check(), 0);
}

/*
 * fork() while other threads read every file of the sysfs-style
 * namespace and write malloc/runs_max_bytes: a file's show or store may
 * take locks under sysfs_lock, and the fork handlers must take those after
 * it. The malloc/runs_* files take the runs' lock (what the control
 * thread does for `slabinfo -p PID --get malloc/runs_bytes`); the fork
 * handlers took it before sysfs_lock, and the first fork waited on the
 * reader for ever. A hang is reported from SIGALRM.
 */
#define SYSFS_FORKS	1000
#define SYSFS_FILES	8192

static int sysfs_stop;
static unsigned long sysfs_reads;
static char *sysfs_files[SYSFS_FILES];
static unsigned int nr_sysfs_files;

/* Every file under dir ("" for the root), into sysfs_files[]. */
static void sysfs_walk(const char *dir)
{
	char *list = malloc(1 << 16), *line, *save;
	ssize_t n = list ? slub_sysfs_read(dir, list, 1 << 16) : -1;

	for (line = n > 0 ? strtok_r(list, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);
		char path[512];

		snprintf(path, sizeof(path), "%s%s%.*s", dir, *dir ? "/" : "",
			 (int)(line[len - 1] == '/' ? len - 1 : len), line);
		if (line[len - 1] == '/')
			sysfs_walk(path);
		else if (nr_sysfs_files < SYSFS_FILES)
			sysfs_files[nr_sysfs_files++] = strdup(path);
	}
	free(list);
}

/* arg 0: the malloc/ files, and the write; 1: every file in turn. */
static void *sysfs_reader(void *arg)
{
	static const char *const files[] = {
		"malloc/runs_bytes", "malloc/runs_check", "malloc/runs_free_bytes",
		"slab/kmalloc-64/objects",
	};
	bool all = arg != NULL;
	char buf[4096];

	for (unsigned int i = 0; !__atomic_load_n(&sysfs_stop, __ATOMIC_RELAXED); i++) {
		const char *f = all ? sysfs_files[i % nr_sysfs_files] : files[i % 4];

		if (slub_sysfs_read(f, buf, sizeof(buf)) >= 0)
			__atomic_fetch_add(&sysfs_reads, 1, __ATOMIC_RELAXED);
		if (!all && i % 16 == 0 &&
		    slub_sysfs_read("malloc/runs_max_bytes", buf, sizeof(buf)) > 0)
			slub_sysfs_write("malloc/runs_max_bytes", buf);
	}
	return NULL;
}

static void fork_sysfs_hung(int sig)
{
	static const char msg[] = "fork_sysfs: fork() beside a sysfs reader hung\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static int fork_sysfs_child(void)
{
	char buf[64];
	char *run = malloc(300 << 10);	/* a run: the runs' lock */

	if (!run || slub_sysfs_read("malloc/runs_bytes", buf, sizeof(buf)) <= 0)
		return 1;
	run[0] = run[(300 << 10) - 1] = 1;
	free(run);
	return 0;
}

static void test_fork_sysfs(void)
{
	char *run = malloc(200 << 10);	/* a chunk of runs exists */
	struct timespec t0, t;
	int forks = 0, failed = 0, status;
	pthread_t tid[2];
	pid_t pid;

	CHECK(run != NULL);
	sysfs_walk("");
	CHECK(nr_sysfs_files > 100);
	if (nr_sysfs_files == 0) {
		free(run);
		return;
	}
	signal(SIGALRM, fork_sysfs_hung);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&tid[i], NULL, sysfs_reader, i ? &tid : NULL), 0);
	while (!__atomic_load_n(&sysfs_reads, __ATOMIC_RELAXED))
		usleep(100);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		alarm(CHILD_TIMEOUT);
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			alarm(CHILD_TIMEOUT);
			_exit(fork_sysfs_child());
		}
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		forks++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (forks < SYSFS_FORKS && t.tv_sec - t0.tv_sec < 5);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	__atomic_store_n(&sysfs_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	fprintf(stderr, "%d forks beside %lu reads of the namespace's %u files\n",
		forks, __atomic_load_n(&sysfs_reads, __ATOMIC_RELAXED), nr_sysfs_files);
	for (unsigned int i = 0; i < nr_sysfs_files; i++)
		free(sysfs_files[i]);
	CHECK_EQ(failed, 0);
	free(run);
	CHECK_EQ(page_alloc_check(), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "atfork-first"))
		return atfork_first();
	test_cpus_init();
	TEST(test_first_call_in_new_threads);
	TEST(test_fork_malloc);
	TEST(test_vfork_malloc);
	TEST(test_fork_during_vfork);
	TEST(test_fork_sysfs);
	TEST(test_vfork_nested);
	TEST(test_vfork_sigchld);
	TEST(test_fork_in_vfork_child);
	TEST(test_vfork_in_handler);
	TEST(test_vfork_child_killed);
	TEST(test_vfork_trim_own_rseq);
	TEST(test_vfork_blocks_outlive_child);
	TEST(test_vfork_setenv);
	TEST(test_atfork_handlers_first);
	return test_done();
}
