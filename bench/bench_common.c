// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_secs(double secs)
{
	struct timespec ts = {
		.tv_sec = (time_t)secs,
		.tv_nsec = (long)((secs - (double)(time_t)secs) * 1e9),
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void cpu_model(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, size, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(buf, size, "%s", colon + 2);
			buf[strcspn(buf, "\n")] = 0;
			break;
		}
	}
	fclose(f);
}

void read_loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "r");

	snprintf(buf, size, "unknown");
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

unsigned int allowed_cpus(int *cpus, unsigned int max)
{
	unsigned int n = 0;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set)) {
		cpus[0] = 0;
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

void pin_to(pthread_t t, int cpu)
{
	cpu_set_t set;
	int r;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	r = pthread_setaffinity_np(t, sizeof(set), &set);
	if (r) {
		fprintf(stderr, "pthread_setaffinity_np(CPU %d): %s\n", cpu, strerror(r));
		exit(1);
	}
}

unsigned int pair_cpu(unsigned int i, unsigned int pairs, unsigned int ncpus)
{
	if (2 * pairs <= ncpus)
		return i;
	return (i / 2 + (i & 1)) % ncpus;
}

/*
 * Read with open() and read() into the stack, not stdio: fopen() mallocs
 * its FILE and buffer, and an allocation may be what runs the measured
 * allocator's deferred work (libslub purges from its slow paths), so the
 * reading would change what it reads.
 */
long status_kb(const char *key)
{
	char buf[4096], *line;
	size_t len = strlen(key), got = 0;
	ssize_t r;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (got < sizeof(buf) - 1 &&
	       (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	buf[got] = 0;
	for (line = buf; *line; line++) {
		if (!strncmp(line, key, len) && line[len] == ':')
			return strtol(line + len + 1, NULL, 10);
		line = strchr(line, '\n');
		if (!line)
			break;
	}
	return -1;
}

bool preload_mapped(void)
{
	const char *pre = getenv("LD_PRELOAD");
	const char *base;
	char line[PATH_MAX + 128];
	bool found = false;
	FILE *f;

	if (!pre || !*pre)
		return true;
	base = strrchr(pre, '/');
	base = base ? base + 1 : pre;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, base) != NULL;
	fclose(f);
	return found;
}

size_t run_child(void (*start)(int wfd, void *arg), void *arg, void *buf,
		 size_t size, int *status)
{
	size_t got = 0;
	int fd[2];
	ssize_t n;
	pid_t pid;

	*status = -1;
	if (pipe(fd))
		return 0;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return 0;
	}
	if (!pid) {
		close(fd[0]);
		start(fd[1], arg);
		fprintf(stderr, "exec: %s\n", strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	while (got < size && (n = read(fd[0], (char *)buf + got, size - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return got;
}

bool is_line_of(const char *text, const char *name, size_t len)
{
	for (const char *l = text; *l; ) {
		size_t n = strcspn(l, "\n");

		if (n == len && !strncmp(l, name, len))
			return true;
		l += n + (l[n] == '\n');
	}
	return false;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double median_of(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

/* ---- The peers' libraries ------------------------------------------------- */

const struct peer_lib peer_libs[] = {
	{ "jemalloc", "libjemalloc2",
	  { "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" } },
	{ "tcmalloc", "libtcmalloc-minimal4",
	  { "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
	    "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4" } },
	{ "mimalloc", "libmimalloc2.0",
	  { "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2" } },
};
const unsigned int nr_peer_libs = sizeof(peer_libs) / sizeof(peer_libs[0]);

const struct peer_lib *peer_lib(const char *name)
{
	for (unsigned int i = 0; i < nr_peer_libs; i++)
		if (!strcmp(peer_libs[i].name, name))
			return &peer_libs[i];
	return NULL;
}

bool peer_lib_path(const struct peer_lib *l, char *buf, size_t size)
{
	for (unsigned int i = 0; i < 3 && l->paths[i]; i++)
		if (!access(l->paths[i], R_OK)) {
			snprintf(buf, size, "%s", l->paths[i]);
			return true;
		}
	buf[0] = '\0';
	return false;
}

bool find_exe_sibling(const char *name, char *buf, size_t size)
{
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	buf[0] = '\0';
	if (n <= 0)
		return false;
	exe[n] = '\0';
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (!slash)
			break;
		*slash = '\0';
		snprintf(buf, size, "%.*s/%s", PATH_MAX - 64, exe, name);
		if (!access(buf, R_OK))
			return true;
	}
	buf[0] = '\0';
	return false;
}

const char *parse_names(char *arg, const char *const *names, unsigned int n, bool *on)
{
	memset(on, 0, n * sizeof(*on));
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		unsigned int i;

		for (i = 0; i < n && strcmp(tok, names[i]); i++)
			;
		if (i == n)
			return tok;
		on[i] = true;
	}
	return NULL;
}

bool alloc_lib_path(const char *name, const char *slub_path, char *buf, size_t size)
{
	const struct peer_lib *l = peer_lib(name);

	buf[0] = 0;
	if (!strcmp(name, "libslub")) {
		if (slub_path)
			snprintf(buf, size, "%s", slub_path);
		else
			find_exe_sibling("libslub-malloc.so", buf, size);
	} else if (l) {
		peer_lib_path(l, buf, size);
	}
	if (buf[0] && access(buf, R_OK))
		buf[0] = 0;
	return buf[0] != 0;
}

void exec_preloaded_path(int wfd, const char *lib, const char *path, char *const argv[])
{
	if (dup2(wfd, 1) < 0)
		return;
	if (lib[0])
		setenv("LD_PRELOAD", lib, 1);
	else
		unsetenv("LD_PRELOAD");
	execv(path, argv);
}

void exec_preloaded(int wfd, const char *lib, char *const argv[])
{
	exec_preloaded_path(wfd, lib, "/proc/self/exe", argv);
}

/* ---- The blocking queue ----------------------------------------------------- */

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

void bq_init(struct bq *q, uint32_t size)
{
	memset(q, 0, offsetof(struct bq, slot));
	q->size = size && size <= BQ_MAX && !(size & (size - 1)) ? size : BQ_MAX;
}

/*
 * Wait until *word moves from seen, announcing it in *waiting first; the
 * other side stores its index, then looks at *waiting, both SEQ_CST.
 */
static void bq_wait(uint32_t *word, uint32_t *waiting, uint32_t seen)
{
	__atomic_store_n(waiting, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == seen)
		futex(word, FUTEX_WAIT_PRIVATE, seen);
	__atomic_store_n(waiting, 0, __ATOMIC_RELAXED);
}

void bq_send(struct bq *q, struct bq_item it)
{
	uint32_t t = q->tail, h;

	while (t - (h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE)) == q->size)
		bq_wait(&q->head, &q->send_waiting, h);
	q->slot[t & (q->size - 1)] = it;
	__atomic_store_n(&q->tail, t + 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&q->recv_waiting, __ATOMIC_SEQ_CST))
		futex(&q->tail, FUTEX_WAKE_PRIVATE, 1);
}

struct bq_item bq_recv(struct bq *q)
{
	uint32_t h = q->head, t;
	struct bq_item it;

	while ((t = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE)) == h)
		bq_wait(&q->tail, &q->recv_waiting, t);
	it = q->slot[h & (q->size - 1)];
	__atomic_store_n(&q->head, h + 1, __ATOMIC_SEQ_CST);
	/*
	 * A sender blocked on a full queue is woken once half of it is free,
	 * as the kernel wakes a writer when half of the socket buffer is
	 * (sock_def_write_space): not once per message. While it sleeps the
	 * queue only drains, so the count passes the half on the way.
	 */
	if (t - (h + 1) <= q->size / 2 &&
	    __atomic_load_n(&q->send_waiting, __ATOMIC_SEQ_CST))
		futex(&q->head, FUTEX_WAKE_PRIVATE, 1);
	return it;
}
