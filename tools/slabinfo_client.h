/* SPDX-License-Identifier: MIT */
/* slabinfo's client of the control socket (src/control.h has the protocol). */
#ifndef SLABINFO_CLIENT_H
#define SLABINFO_CLIENT_H

#include <stdio.h>

#include "slabinfo.h"

struct remote {
	int fd;			/* -1 once the connection broke */
	long pid;
	char path[108];
	size_t pos, len;	/* buffered reply bytes in buf[pos..len) */
	long long deadline;	/* the reply being read: CLOCK_MONOTONIC ms */
	char buf[4096];
};

/*
 * Connect to process pid's socket, trying each candidate directory.
 * Returns 0, or -errno after saying why on err: -ENOENT no socket (or no
 * such process), -EACCES another user's, -ECONNREFUSED a stale socket.
 */
int remote_open(struct remote *r, long pid, FILE *err);
void remote_close(struct remote *r);
/* What a -errno of the calls below means, said for a person. */
const char *remote_strerror(int err);
/* r as a slabinfo source: reads and writes over the socket. */
struct slabinfo_source remote_source(struct remote *r);

/* Every socket in the candidate directories: "PID COMM PATH" per line. */
int remote_list(FILE *out, FILE *err);

#endif /* SLABINFO_CLIENT_H */
