// SPDX-License-Identifier: MIT
/*
 * The slabinfo command against a live process: slabinfo_child, started
 * with SLUB_CONTROL=1, is read and tuned with `slabinfo -p`, its socket is
 * fed garbage, truncated and unknown requests (and must go on serving),
 * its directory and socket permissions are checked, it forks, and its
 * SLUB_STATS=1 exit report is read back with `slabinfo -f`.
 *
 * SLABINFO, SLABINFO_CHILD and SLABINFO_JSON (tests/CMakeLists.txt) name
 * the programs; SLUB_CONTROL_DIR is a fresh directory for this run.
 */
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "control.h"
#include "test.h"
#include "slabinfo_helpers.h"

#define OUT_SIZE	(256 << 10)

static const char *tool, *child_prog, *json_check;
static char ctl_dir[64], out[OUT_SIZE];

struct child {
	pid_t pid;
	FILE *in, *out;
	char path[128];		/* its control socket */
};

static struct child live;

/*
 * Start slabinfo_child: with SLUB_CONTROL=1 if control, with SLUB_STATS=1
 * and stderr into stats_file if one is given. Waits for "ready".
 */
static bool spawn(struct child *c, bool control, const char *stats_file)
{
	int to[2], from[2];
	char line[256];

	memset(c, 0, sizeof(*c));
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		return false;
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		dup2(to[0], STDIN_FILENO);
		dup2(from[1], STDOUT_FILENO);
		if (stats_file) {
			int fd = open(stats_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

			dup2(fd, STDERR_FILENO);
			setenv("SLUB_STATS", "1", 1);
		}
		if (control)
			setenv("SLUB_CONTROL", "1", 1);
		execl(child_prog, child_prog, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	if (c->pid < 0 || !fgets(line, sizeof(line), c->out) ||
	    strncmp(line, "ready ", 6)) {
		fprintf(stderr, "slabinfo_child did not start\n");
		return false;
	}
	if (!control)
		return true;
	fprintf(c->in, "path\n");
	fflush(c->in);
	if (!fgets(c->path, sizeof(c->path), c->out))
		return false;
	c->path[strcspn(c->path, "\n")] = '\0';
	return c->path[0] == '/';
}

/* One command to the child, its one-line answer into line. */
static const char *ask(struct child *c, const char *cmd, char *line, size_t size)
{
	fprintf(c->in, "%s\n", cmd);
	fflush(c->in);
	if (!fgets(line, (int)size, c->out))
		return "";
	line[strcspn(line, "\n")] = '\0';
	return line;
}

/* "quit"; returns the exit status. */
static int quit(struct child *c)
{
	int status = -1;

	fprintf(c->in, "quit\n");
	fclose(c->in);
	fclose(c->out);
	waitpid(c->pid, &status, 0);
	return status;
}

/* slabinfo -p <live> ARGS; its stdout (and stderr with 2>&1) in out. */
#define slabinfo(args, ...) \
	run_cmd(out, sizeof(out), "%s -p %ld " args, tool, (long)live.pid, ##__VA_ARGS__)

static int ctl_connect(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	int fd;

	if (len >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Send raw bytes on fd and read the one reply. */
static const char *exchange(int fd, const void *req, size_t len, char *buf, size_t size)
{
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		return "(send failed)";
	read_reply(fd, buf, size);
	return buf;
}

/* Whether fd has bytes (or its end) to read within ms. */
static bool wait_readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/* The child still answers: over the socket, and on its stdin. */
static void check_serving(void)
{
	char want[32], line[64];

	snprintf(want, sizeof(want), "%ld\n", (long)live.pid);
	CHECK_EQ(slabinfo("--get process/pid"), 0);
	CHECK(!strcmp(out, want));
	CHECK(!strcmp(ask(&live, "get slab/" KNOWN_NAME "/objects", line,
			  sizeof(line)), "35") || !strcmp(line, "24"));
}

static void test_live_table(void)
{
	struct table_row r;

	CHECK_EQ(slabinfo(KNOWN_NAME), 0);
	check_known_row(out, &known_before);
	CHECK_EQ(slabinfo("-B " KNOWN_NAME), 0);
	CHECK(table_row(out, KNOWN_NAME, &r) && !strcmp(r.space, "12288"));
	/* The whole table: every cache with slabs, kmem_cache among them. */
	CHECK_EQ(slabinfo(""), 0);
	CHECK(table_row(out, "kmem_cache", &r));
	CHECK(table_row(out, KNOWN_NAME, &r));
}

/* --set is slub_sysfs_write() in the child, with its validation. */
static void test_set_get(void)
{
	char line[64], mine[64];

	CHECK_EQ(slabinfo("--set slab/kmalloc-256/slab_thrash_ratio=20"), 0);
	CHECK(!strcmp(out, ""));	/* nothing printed */
	CHECK_EQ(slabinfo("--get slab/kmalloc-256/slab_thrash_ratio"), 0);
	out[strcspn(out, "\n")] = '\0';
	snprintf(mine, sizeof(mine), "%.60s", out);
	CHECK(!strcmp(ask(&live, "get slab/kmalloc-256/slab_thrash_ratio", line,
			  sizeof(line)), mine));
	/* 20% of 16 objects is 3 objects: the ratio reads back as 18. */
	CHECK(!strcmp(mine, "18"));
	CHECK_EQ(slabinfo("--set slab/" KNOWN_NAME "/slab_thrash_ratio=20"), 0);
	CHECK(!strcmp(ask(&live, "get slab/" KNOWN_NAME "/slab_thrash_ratio", line,
			  sizeof(line)), "20"));
	/* Refused as slub_sysfs_write() refuses, and nothing changes. */
	CHECK_EQ(slabinfo("--set slab/" KNOWN_NAME "/slab_thrash_ratio=200 2>&1"), 1);
	CHECK(strstr(out, "Invalid argument") != NULL);
	CHECK_EQ(slabinfo("--set slab/" KNOWN_NAME "/slab_thrash_ratio=x1 2>&1"), 1);
	CHECK(!strcmp(ask(&live, "get slab/" KNOWN_NAME "/slab_thrash_ratio", line,
			  sizeof(line)), "20"));
	CHECK_EQ(slabinfo("--set slab/" KNOWN_NAME "/objects=1 2>&1"), 1);
	CHECK(strstr(out, "Operation not permitted") != NULL);
	CHECK_EQ(slabinfo("--set slab/nope/order=1 2>&1"), 1);
	CHECK(strstr(out, "No such file or directory") != NULL);
	CHECK_EQ(slabinfo("--set 'slab/" KNOWN_NAME "/min_partial=5 6' 2>&1"), 1);
	/* A value with a space went through escaped, and was refused. */
	CHECK(strstr(out, "Invalid argument") != NULL);
	CHECK_EQ(slabinfo("--get slab 2>&1"), 0);
	CHECK(strstr(out, KNOWN_NAME "/\n") != NULL);
}

/* The Space column (-B: bytes) of slabinfo ARGS, row by row, is in order. */
static void check_space_order(const char *args, bool ascending)
{
	unsigned long prev = ascending ? 0 : ~0UL;
	char names[64][64];
	struct table_row r;
	int n;

	CHECK_EQ(slabinfo("%s", args), 0);
	n = table_names(out, names, 64);
	CHECK(n >= 2);
	for (int i = 0; i < n; i++) {
		unsigned long space;

		CHECK(table_row(out, names[i], &r));
		space = strtoul(r.space, NULL, 10);
		CHECK(ascending ? space >= prev : space <= prev);
		prev = space;
	}
}

static void test_views(void)
{
	struct activity_row a;
	char names[64][64];
	int n = 0;

	CHECK_EQ(slabinfo("-D " KNOWN_NAME), 0);
	CHECK(activity_row(out, KNOWN_NAME, &a));
	if (SLAB_STATS_ON) {
		CHECK_EQ(a.alloc, KNOWN_ALLOC_FAST + KNOWN_ALLOC_SLOW);
		CHECK_EQ(a.free, KNOWN_FREE_FAST + KNOWN_FREE_SLOW);
	}
	CHECK_EQ(slabinfo("-r " KNOWN_NAME), 0);
	CHECK(strstr(out, "Objects: 35 of 60") != NULL);
	CHECK(strstr(out, "Every counter") != NULL);
	CHECK_EQ(slabinfo("-T"), 0);
	CHECK(strstr(out, "Slabcache totals") != NULL);
	CHECK_EQ(slabinfo("-b"), 0);
	CHECK(strstr(out, "Free blocks") != NULL && strstr(out, "pcp_count") != NULL);
	/* -e shows caches without slabs, as the kmalloc caches here are. */
	CHECK_EQ(slabinfo("-e"), 0);
	n = table_names(out, names, 64);
	CHECK(n > 3);
	/*
	 * -S orders by space, largest first, -i smallest first, over the
	 * socket as in the process. Which cache is largest is the child's
	 * business (kmem_cache needs a second slab for one more cache), so
	 * the check is the order of what the table shows, and -N's cut.
	 */
	check_space_order("-S -B", false);
	check_space_order("-S -i -B", true);
	CHECK_EQ(slabinfo("-S -N 1"), 0);
	CHECK_EQ(table_names(out, names, 64), 1);
	/* Watch mode: a frame per refresh, each with slabtop's summary. */
	CHECK_EQ(slabinfo("-w 0.1 -c 3 " KNOWN_NAME), 0);
	n = 0;
	for (const char *p = out; (p = strstr(p, " Objects in use / total")); p++)
		n++;
	CHECK_EQ(n, 3);
	/* From the second frame: the idle child stopped no CPU meanwhile. */
	n = 0;
	for (const char *p = out; (p = strstr(p, " membarrier IPIs +0, lock waits +")); p++)
		n++;
	CHECK_EQ(n, 2);
	/* In watch mode -D shows what happened since the last refresh: nothing. */
	CHECK_EQ(slabinfo("-w 0.1 -c 2 -D " KNOWN_NAME), 0);
	CHECK(activity_row(strrchr(out, '%'), KNOWN_NAME, &a));
	CHECK_EQ(a.alloc, 0);
	CHECK_EQ(a.objects, 35);
}

static void test_json(void)
{
	CHECK_EQ(run_cmd(out, sizeof(out), "/usr/bin/python3 %s %s -p %ld 2>&1",
			 json_check, tool, (long)live.pid), 0);
	CHECK(strstr(out, "0 differences") != NULL);
	CHECK_EQ(run_cmd(out, sizeof(out), "/usr/bin/python3 %s %s -p %ld -e -S 2>&1",
			 json_check, tool, (long)live.pid), 0);
	if (!strstr(out, "0 differences"))
		fprintf(stderr, "%s", out);
}

static void test_bad_requests(void)
{
	static const struct {
		const char *req, *reply;
	} cases[] = {
		{ "\x01\x02garbage\xff\n", "error 22 malformed request\n" },
		{ "read  slab\n", "error 22 malformed request\n" },
		{ "read\n", "error 22 request without a path\n" },
		{ "frobnicate slab\n", "error 22 unknown request\n" },
		{ "read slab/nope/objects\n", "error 2 " },
		{ "read slab/" KNOWN_NAME "/nope\n", "error 2 " },
		{ "read slab/" KNOWN_NAME "/shrink\n", "error 1 " },
		{ "list slab/" KNOWN_NAME "/objects\n", "error 20 " },
		{ "write slab/" KNOWN_NAME "/order\n", "error 22 write without a value\n" },
		{ "write slab/" KNOWN_NAME "/order 99\n", "error 22 " },
		{ "read slab/%zz\n", "error 22 bad escape in request\n" },
		{ "read slab/a%00b\n", "error 22 bad escape in request\n" },
		{ "read a b\n", "error 22 too many words in request\n" },
		{ "read slab/" KNOWN_NAME "/objects\n", "ok 3\n35\n" },
		{ "read slab%2F" KNOWN_NAME "%2Fobjects\n", "ok 3\n35\n" },
		{ "list slab/" KNOWN_NAME "\n", "ok " },
		{ "read /\n", "ok " },
	};
	char buf[4096];
	int fd = ctl_connect(live.path);

	CHECK(fd >= 0);
	/* One connection throughout: an error leaves it usable. */
	for (size_t i = 0; fd >= 0 && i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *r = exchange(fd, cases[i].req, strlen(cases[i].req),
					 buf, sizeof(buf));

		if (strncmp(r, cases[i].reply, strlen(cases[i].reply))) {
			fprintf(stderr, "request %zu: got '%s'\n", i, r);
			CHECK(0);
		}
	}
	/* Embedded NUL bytes are garbage too. */
	CHECK(!strncmp(exchange(fd, "read sl\0ab\n", 11, buf, sizeof(buf)),
		       "error 22 malformed", 18));
	close(fd);
	check_serving();
}

/* A client that stops mid-request, or goes away, harms nothing. */
static void test_truncated(void)
{
	char big[CTL_MAX_REQUEST + 100], buf[256];
	int fd = ctl_connect(live.path);

	/* End of file inside a request: an error, then the server closes. */
	CHECK(send(fd, "read slab/si_te", 15, MSG_NOSIGNAL) == 15);
	shutdown(fd, SHUT_WR);
	read_reply(fd, buf, sizeof(buf));
	CHECK(!strcmp(buf, "error 22 truncated request\n"));
	CHECK_EQ(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	/* A request longer than the limit: an error, then the server closes. */
	memset(big, 'a', sizeof(big));
	fd = ctl_connect(live.path);
	CHECK(!strncmp(exchange(fd, big, sizeof(big), buf, sizeof(buf)),
		       "error 7 request too long\n", 25));
	/* Closed: end of file, or a reset for the bytes it never read. */
	CHECK(read(fd, buf, sizeof(buf)) <= 0);
	close(fd);
	/* Gone mid-request, and gone before reading a reply. */
	fd = ctl_connect(live.path);
	CHECK(send(fd, "read sla", 8, MSG_NOSIGNAL) == 8);
	close(fd);
	fd = ctl_connect(live.path);
	for (int i = 0; i < 50; i++)
		CHECK(send(fd, "read slab\n", 10, MSG_NOSIGNAL) == 10);
	close(fd);
	check_serving();
}

/*
 * A byte now and then is no request: the idle clock (10 s) runs from the
 * last whole request, or the accept, and the server closes the
 * connection on time. It had restarted the clock at every byte: such a
 * client kept its connection slot for ever.
 */
static void test_idle_trickle(void)
{
	int fd = ctl_connect(live.path);
	long long start = control_now_ms(), took;
	char buf[64];

	CHECK(fd >= 0);
	while (control_now_ms() - start < 15000) {
		if (send(fd, "r", 1, MSG_NOSIGNAL) != 1 || wait_readable(fd, 500))
			break;
	}
	took = control_now_ms() - start;
	CHECK(took > 9000 && took < 13000);
	CHECK(read(fd, buf, sizeof(buf)) <= 0);	/* closed, no reply */
	close(fd);
	check_serving();
}

/* Idle connections hold up nobody; past the limit a client is told so. */
static void test_busy(void)
{
	int fds[8], extra;
	char buf[256];

	for (int i = 0; i < 8; i++)
		fds[i] = ctl_connect(live.path);
	/* The server takes connections in its own time: let it see all 8. */
	CHECK(!strncmp(exchange(fds[7], "read process/pid\n", 17, buf, sizeof(buf)),
		       "ok ", 3));
	extra = ctl_connect(live.path);
	read_reply(extra, buf, sizeof(buf));
	CHECK(!strcmp(buf, "error 16 too many connections\n"));
	close(extra);
	/* While 7 sit idle, the 8th is served. */
	CHECK(!strncmp(exchange(fds[7], "read process/pid\n", 17, buf, sizeof(buf)),
		       "ok ", 3));
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	check_serving();
}

static long child_cpu_ms(void)
{
	char line[64];

	return strtol(ask(&live, "cpu", line, sizeof(line)), NULL, 10);
}

/*
 * The child at RLIMIT_NOFILE nofile, every descriptor taken. A request
 * waits 1 s for an answer that cannot come: the server must not spin
 * meanwhile (it took a whole CPU on accept()'s EMFILE), nor give up (a
 * failed poll() ended it: a limit under its descriptor count is EINVAL).
 * Given descriptors back, it serves the waiting request.
 */
static void check_starved(const char *nofile)
{
	char line[64], buf[256];
	long cpu;
	int fd;

	CHECK(!strncmp(ask(&live, nofile, line, sizeof(line)), "nofile ", 7));
	cpu = child_cpu_ms();
	fd = ctl_connect(live.path);
	CHECK(fd >= 0 && send(fd, "read process/pid\n", 17, MSG_NOSIGNAL) == 17);
	CHECK(!wait_readable(fd, 1000));
	cpu = child_cpu_ms() - cpu;
	if (cpu >= 200)
		fprintf(stderr, "  %s: the child spent %ld ms of CPU in 1 s\n", nofile, cpu);
	CHECK(cpu < 200);
	CHECK(!strcmp(ask(&live, "files", line, sizeof(line)), "files ok"));
	CHECK(wait_readable(fd, 15000));
	read_reply(fd, buf, sizeof(buf));
	CHECK(!strncmp(buf, "ok ", 3));
	close(fd);
}

static void test_out_of_descriptors(void)
{
	char line[64], buf[256];
	int fd, out_of = 0;

	/*
	 * Out of descriptors, but with its spare: it says so unasked. The
	 * server may close the last test's connections after the child took
	 * what was free: a connection on such a descriptor is taken as any
	 * other and answers only a request (the test waited 3 s for an
	 * unasked answer and failed under load). The child takes those too
	 * and the count starts again, until the server is out three times.
	 */
	for (int i = 0; out_of < 3; i++) {
		bool asked = false;

		if (!out_of)
			CHECK(!strncmp(ask(&live, "nofile 64", line, sizeof(line)),
				       "nofile ", 7));
		fd = ctl_connect(live.path);
		CHECK(fd >= 0);
		if (!wait_readable(fd, 500))
			asked = send(fd, "read process/pid\n", 17, MSG_NOSIGNAL) == 17;
		CHECK(wait_readable(fd, 15000));
		read_reply(fd, buf, sizeof(buf));
		close(fd);
		if (!asked && !strcmp(buf, "error 24 Too many open files\n")) {
			out_of++;
		} else if (asked && i < 50) {
			/* Taken on a free descriptor: "ok", or error 24 reading. */
			out_of = 0;
			usleep(20000);
		} else {
			break;
		}
	}
	CHECK(out_of == 3);
	CHECK(!strcmp(ask(&live, "files", line, sizeof(line)), "files ok"));
	/* Below its own descriptors: no spare can help (3); poll() fails (1). */
	check_starved("nofile 3");
	check_starved("nofile 1");
	check_serving();
}

/* Bytes the slow reader got, and whether the server closed on it. */
struct slow_reader {
	int fd;
	size_t got;
	bool closed;
	int fast;		/* set: read the rest at once */
};

/*
 * 1 KiB every 200 ms: each send of the server completes, soon enough for
 * a timeout per send; until told to read the rest at once.
 */
static void *slow_read(void *arg)
{
	struct slow_reader *sr = arg;
	char buf[65536];

	for (int i = 0; i < 2000; i++) {
		bool fast = __atomic_load_n(&sr->fast, __ATOMIC_ACQUIRE);
		ssize_t n = recv(sr->fd, buf, fast ? sizeof(buf) : 1024, 0);

		if (n <= 0) {
			sr->closed = true;
			break;
		}
		sr->got += (size_t)n;
		if (!fast)
			usleep(200 * 1000);
	}
	return NULL;
}

/*
 * A client that asks for much and reads slowly holds up nobody: the
 * replies to one batch of its requests have two seconds in all, not each
 * send. Before, a client reading 1 KiB at a time just fast enough kept
 * the server on its replies for minutes: every other client timed out,
 * and exit() waited in slub_control_stop() (89 s, stopped by hand).
 */
static void test_slow_reader(void)
{
	static const char req[] = "list slab/" KNOWN_NAME "\n";
	static char reqs[600 * sizeof(req)];
	struct slow_reader sr = { .fd = ctl_connect(live.path) };
	size_t len = 0;
	char buf[256];
	pthread_t t;
	int fd;

	for (int i = 0; i < 600; i++, len += sizeof(req) - 1)
		memcpy(reqs + len, req, sizeof(req) - 1);
	CHECK(sr.fd >= 0);
	CHECK(send(sr.fd, reqs, len, MSG_NOSIGNAL) == (ssize_t)len);
	CHECK_EQ(pthread_create(&t, NULL, slow_read, &sr), 0);
	usleep(300 * 1000);
	/* Another client: served once the slow one is dropped, 2 s on. */
	fd = ctl_connect(live.path);
	CHECK(fd >= 0);
	CHECK(send(fd, "read process/pid\n", 17, MSG_NOSIGNAL) == 17);
	CHECK(wait_readable(fd, 15000));
	read_reply(fd, buf, sizeof(buf));
	CHECK(!strncmp(buf, "ok ", 3));
	close(fd);
	__atomic_store_n(&sr.fast, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(sr.closed);
	fprintf(stderr, "the slow reader got %zu bytes before it was dropped\n", sr.got);
	close(sr.fd);
	check_serving();
}

/* ---- Servers that are not what they seem ---------------------------------- */

enum fake { FAKE_HUGE, FAKE_ENDLESS, FAKE_PLAUSIBLE, FAKE_GONE };

/*
 * A process that is not libslub's, listening on dir/<name_pid>.sock
 * (its own pid when name_pid is 0): its answers are a reply's head with
 * an absurd length, a head that never ends, or a plausible "ok 4\nfake".
 */
static pid_t fake_server(const char *dir, long name_pid, enum fake how, char *path,
			 size_t size)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0), c;
		char buf[4096];

		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%ld.sock", dir,
			 name_pid ? name_pid : (long)getpid());
		if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
		    listen(fd, 4))
			_exit(2);
		while ((c = accept(fd, NULL, NULL)) >= 0) {
			if (recv(c, buf, sizeof(buf), 0) <= 0)
				continue;
			if (how == FAKE_GONE) {
				_exit(0);	/* as an exec or an exit mid-request */
			} else if (how == FAKE_PLAUSIBLE) {
				send(c, "ok 4\nfake", 9, MSG_NOSIGNAL);
			} else {
				memset(buf, how == FAKE_HUGE ? 'y' : 'x', sizeof(buf));
				if (how == FAKE_HUGE)
					send(c, "ok 99999999999999\n", 18, MSG_NOSIGNAL);
				while (send(c, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
					;
			}
			close(c);
		}
		_exit(0);
	}
	snprintf(path, size, "%s/%ld.sock", dir, name_pid ? name_pid : (long)pid);
	for (int i = 0; i < 500 && access(path, F_OK); i++)
		usleep(10 * 1000);
	CHECK(!access(path, F_OK));
	return pid;
}

static void fake_stop(pid_t pid, const char *path)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
}

/*
 * slabinfo -p against servers that are not libslub's: an answer that
 * never ends, or claims 99999999999999 bytes, is a protocol error at once
 * (it hung for good); a socket whose server is not the process asked
 * for, or that sits in a directory others may write to, is not trusted
 * (another user could make the path first and be served our writes).
 */
static void test_fake_servers(void)
{
	char path[128], open_dir[128];
	pid_t f;

	f = fake_server(ctl_dir, 0, FAKE_HUGE, path, sizeof(path));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -p %ld --get process/pid 2>&1", tool,
			 (long)f), 1);
	CHECK(strstr(out, "not a libslub control socket's reply") != NULL);
	fake_stop(f, path);
	f = fake_server(ctl_dir, 0, FAKE_ENDLESS, path, sizeof(path));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -p %ld --get process/pid 2>&1", tool,
			 (long)f), 1);
	CHECK(strstr(out, "not a libslub control socket's reply") != NULL);
	fake_stop(f, path);
	/* A server gone mid-request: said so, not "Input/output error". */
	f = fake_server(ctl_dir, 0, FAKE_GONE, path, sizeof(path));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -p %ld --get process/pid 2>&1", tool,
			 (long)f), 1);
	CHECK(strstr(out, "closed the connection") != NULL);
	fake_stop(f, path);
	/* On the socket path of this process, which serves nothing. */
	f = fake_server(ctl_dir, (long)getpid(), FAKE_PLAUSIBLE, path, sizeof(path));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -p %ld --get process/pid 2>&1", tool,
			 (long)getpid()), 1);
	CHECK(strstr(out, "served by another process") != NULL);
	CHECK(strstr(out, "fake") == NULL);
	fake_stop(f, path);
	/* Its own path, but in a directory open to all. */
	snprintf(open_dir, sizeof(open_dir), "%s-open", ctl_dir);
	CHECK(!mkdir(open_dir, 0777) && !chmod(open_dir, 0777));
	f = fake_server(open_dir, 0, FAKE_PLAUSIBLE, path, sizeof(path));
	CHECK_EQ(run_cmd(out, sizeof(out), "SLUB_CONTROL_DIR=%s %s -p %ld --get "
			 "process/pid 2>&1", open_dir, tool, (long)f), 1);
	CHECK(strstr(out, "not a private directory") != NULL);
	CHECK(strstr(out, "fake") == NULL);
	fake_stop(f, path);
	rmdir(open_dir);
	check_serving();
}

/*
 * The socket of a process that exec'd, or left by _exit(), skipping the
 * atexit handler, stays behind (every `sh -c` under SLUB_CONTROL=1 left
 * one): the next server removes those of processes that are gone, and
 * only those.
 */
static void test_stale_reaped(void)
{
	char dead[128], alive[128];
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct child c;
	pid_t pid;
	int fd;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%ld.sock", ctl_dir,
			 (long)getpid());
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		_exit(fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
		      listen(fd, 1));
	}
	CHECK(waitpid(pid, NULL, 0) == pid);
	snprintf(dead, sizeof(dead), "%s/%ld.sock", ctl_dir, (long)pid);
	CHECK(!access(dead, F_OK));
	/* A live process that does not serve: its file stays. */
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%ld.sock", ctl_dir,
		 (long)getpid());
	snprintf(alive, sizeof(alive), "%s", addr.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0 && !bind(fd, (struct sockaddr *)&addr, sizeof(addr)));
	close(fd);
	CHECK(spawn(&c, true, NULL));
	CHECK(access(dead, F_OK) && errno == ENOENT);
	CHECK(!access(alive, F_OK));
	CHECK_EQ(quit(&c), 0);
	unlink(alive);
	check_serving();
}

/*
 * Another user's connect() is refused by the kernel (EACCES), before the
 * server sees anything. Trying needs root, to become that user.
 */
static void check_other_user(const char *path)
{
	pid_t pid;
	int status;

	if (geteuid() != 0)
		return;
	pid = fork();
	if (pid == 0) {
		struct passwd *pw = getpwnam("nobody");
		uid_t uid = pw ? pw->pw_uid : 65534;

		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(2);
		_exit(ctl_connect(path) == -EACCES ? 0 : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
}

/* The operating system keeps other users out: 0700 directory, 0600 socket. */
static void test_permissions(void)
{
	struct stat st;
	char dir[128];

	snprintf(dir, sizeof(dir), "%s", live.path);
	*strrchr(dir, '/') = '\0';
	CHECK(!strcmp(dir, ctl_dir));
	CHECK(!lstat(dir, &st) && S_ISDIR(st.st_mode));
	CHECK_EQ(st.st_mode & 0777, 0700);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK(!lstat(live.path, &st) && S_ISSOCK(st.st_mode));
	CHECK_EQ(st.st_mode & 0777, 0600);
	CHECK_EQ(st.st_uid, geteuid());
	check_other_user(live.path);
	check_serving();
}

/* A forked child does not serve the parent's socket, nor remove it. */
static void test_fork(void)
{
	char line[128];

	CHECK(!strcmp(ask(&live, "fork", line, sizeof(line)), "fork ok"));
	if (strcmp(line, "fork ok"))
		fprintf(stderr, "child said: %s\n", line);
	check_serving();
}

/* SLUB_CONTROL_DIR and XDG_RUNTIME_DIR unset: /tmp/libslub-<uid>. */
static void test_default_dir(void)
{
	char want[128], *saved = strdup(ctl_dir);
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char *saved_xdg = xdg ? strdup(xdg) : NULL;
	struct child c;
	struct stat st;
	struct table_row r;

	unsetenv("SLUB_CONTROL_DIR");
	unsetenv("XDG_RUNTIME_DIR");
	CHECK(spawn(&c, true, NULL));
	snprintf(want, sizeof(want), "/tmp/libslub-%u/%ld.sock",
		 (unsigned int)geteuid(), (long)c.pid);
	CHECK(!strcmp(c.path, want));
	*strrchr(want, '/') = '\0';
	CHECK(!lstat(want, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	CHECK_EQ(st.st_uid, geteuid());
	check_other_user(c.path);
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -p %ld " KNOWN_NAME, tool, (long)c.pid), 0);
	CHECK(table_row(out, KNOWN_NAME, &r));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -l", tool), 0);
	CHECK(strstr(out, c.path) != NULL);
	CHECK_EQ(quit(&c), 0);
	setenv("SLUB_CONTROL_DIR", saved, 1);
	if (saved_xdg)
		setenv("XDG_RUNTIME_DIR", saved_xdg, 1);
	free(saved);
	free(saved_xdg);
}

/* Last of the live ones: -s shrinks the child's cache. */
static void test_live_shrink(void)
{
	CHECK_EQ(slabinfo("-s " KNOWN_NAME), 0);
	check_known_row(out, &known_after_shrink);
}

/* After exit: no socket left, and slabinfo says the process is gone. */
static void test_gone(void)
{
	struct stat st;

	CHECK_EQ(quit(&live), 0);
	CHECK(lstat(live.path, &st) && errno == ENOENT);
	CHECK_EQ(slabinfo("2>&1"), 1);
	CHECK(strstr(out, "slabinfo: ") != NULL);
}

/*
 * A record edited by hand is refused, with the reason, where its figures
 * would be wrong or unsafe to print (an order of 64 was undefined
 * behaviour in the Space column; a slab count near 2^52 wrapped it; an
 * escape sequence in a name reached the terminal). sed edits the
 * si_test line or the process line of a good record.
 */
static void check_edited_records(const char *file)
{
	static const struct {
		const char *sed, *why;
	} edits[] = {
		{ "s/^\\(cache name=si_test .*\\) order=[0-9]*/\\1 order=64/", "not sound" },
		{ "s/^\\(cache name=si_test .*\\) slabs=[0-9]*/\\1 slabs=4503599627370496/",
		  "not sound" },
		{ "/^cache name=si_test /p", "appears twice" },
		{ "s/^cache name=si_test /&name=other /", "malformed" },
		{ "s/^cache name=si_test /cache name=%1B%5B2J /", "malformed" },
		{ "s/^process pid=[0-9]*/process pid=9223372036854775808/", "malformed" },
		{ "s/ nr_cpu_ids=[0-9]*/ nr_cpu_ids=0/", "malformed" },
		{ "/^process /d", "missing" },
		{ "s/^process /process\\x00 /", "NUL byte" },
	};

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		CHECK_EQ(run_cmd(out, sizeof(out), "sed '%s' %s | %s -f - 2>&1",
				 edits[i].sed, file, tool), 1);
		if (!strstr(out, edits[i].why)) {
			fprintf(stderr, "edit %s: %s", edits[i].sed, out);
			CHECK(0);
		}
	}
	/* Not a file to read: the error, not "no exit report found". */
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s 2>&1", tool, ctl_dir), 1);
	CHECK(strstr(out, "Is a directory") != NULL);
}

/* SLUB_STATS=1: the report at exit, read back by slabinfo -f. */
static void test_exit_report(void)
{
	char file[128], pid[32], sock[160];
	struct child c;
	struct table_row r;
	struct activity_row a;

	snprintf(file, sizeof(file), "%s/report", ctl_dir);
	CHECK(spawn(&c, false, file));
	/* Not asked for: no socket, and process/control says so. */
	CHECK(!strcmp(ask(&c, "get process/control", sock, sizeof(sock)), ""));
	snprintf(sock, sizeof(sock), "%s/%ld.sock", ctl_dir, (long)c.pid);
	CHECK(access(sock, F_OK) && errno == ENOENT);
	CHECK_EQ(quit(&c), 0);
	CHECK_EQ(run_cmd(out, sizeof(out), "head -n 1 %s", file), 0);
	CHECK(!strcmp(out, "libslub: SLUB_STATS report for slabinfo_child\n"));
	/* The report's own table, and slabinfo's reading of the record. */
	CHECK_EQ(run_cmd(out, sizeof(out), "cat %s", file), 0);
	check_known_row(out, &known_before);
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s " KNOWN_NAME, tool, file), 0);
	check_known_row(out, &known_before);
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f - -D " KNOWN_NAME " < %s", tool, file), 0);
	CHECK(activity_row(out, KNOWN_NAME, &a));
	if (SLAB_STATS_ON)
		CHECK_EQ(a.alloc, KNOWN_ALLOCS);
	snprintf(pid, sizeof(pid), "%ld", (long)c.pid);
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s -p %s -B " KNOWN_NAME, tool,
			 file, pid), 0);
	CHECK(table_row(out, KNOWN_NAME, &r) && !strcmp(r.space, "12288"));
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s -p 1 2>&1", tool, file), 1);
	CHECK_EQ(run_cmd(out, sizeof(out), "/usr/bin/python3 %s %s -f %s 2>&1",
			 json_check, tool, file), 0);
	CHECK(strstr(out, "0 differences") != NULL);
	/* Cut short, the record is refused. */
	CHECK_EQ(run_cmd(out, sizeof(out), "head -n -1 %s | %s -f - 2>&1", file, tool), 1);
	CHECK(strstr(out, "truncated") != NULL);
	check_edited_records(file);
	/* A file, not a process: nothing to write to or watch. */
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s -s 2>&1", tool, file), 2);
	CHECK_EQ(run_cmd(out, sizeof(out), "%s -f %s -w 1 2>&1", tool, file), 2);
	unlink(file);
}

int main(void)
{
	tool = test_prog("SLABINFO");
	child_prog = test_prog("SLABINFO_CHILD");
	json_check = test_prog("SLABINFO_JSON");
	if (!tool || !child_prog || !json_check)
		return 1;
	snprintf(ctl_dir, sizeof(ctl_dir), "/tmp/slabinfo-live-XXXXXX");
	if (!mkdtemp(ctl_dir))
		return 1;
	/* Open to all, so that only the library's own directory keeps others out. */
	chmod(ctl_dir, 0755);
	/* The library creates the directory itself, private. */
	strcat(ctl_dir, "/ctl");
	setenv("SLUB_CONTROL_DIR", ctl_dir, 1);
	signal(SIGPIPE, SIG_IGN);
	if (!spawn(&live, true, NULL))
		return 1;
	TEST(test_live_table);
	TEST(test_set_get);
	TEST(test_views);
	TEST(test_json);
	TEST(test_bad_requests);
	TEST(test_truncated);
	TEST(test_idle_trickle);
	TEST(test_busy);
	TEST(test_out_of_descriptors);
	TEST(test_slow_reader);
	TEST(test_fake_servers);
	TEST(test_stale_reaped);
	TEST(test_permissions);
	TEST(test_fork);
	TEST(test_default_dir);
	TEST(test_live_shrink);
	TEST(test_gone);
	TEST(test_exit_report);
	/* Whatever a failed check left behind goes too. */
	*strrchr(ctl_dir, '/') = '\0';
	run_cmd(out, sizeof(out), "rm -rf %s", ctl_dir);
	return test_done();
}
