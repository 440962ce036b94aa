/* SPDX-License-Identifier: MIT */
/*
 * The sysfs-style namespace: a tree of directories, each with a table of
 * attribute files whose show/store callbacks render and parse text. The
 * tree is intrusive (each layer owns its struct sysfs_dir), so registering
 * allocates nothing. One lock, sysfs_lock, covers lookups and callbacks; it
 * is taken before any allocator lock, never after one.
 */
#ifndef SLUB_SYSFS_H
#define SLUB_SYSFS_H

#include <stdarg.h>
#include <stddef.h>

#include "compiler.h"
#include "lock.h"
#include "percpu.h"

/* Text output bounded by the caller's buffer; len counts what was wanted. */
struct seq_buf {
	char *buf;
	size_t size;
	size_t len;
};

__printf(2, 3) void seq_printf(struct seq_buf *s, const char *fmt, ...);

struct slub_attr {
	const char *name;
	void (*show)(struct seq_buf *s, void *obj, long arg);
	/* 0 or -errno; NULL for a read-only file. */
	int (*store)(void *obj, long arg, const char *val);
	long arg;
};

struct sysfs_dir {
	const char *name;
	const struct slub_attr *attrs;
	unsigned int nr_attrs;
	void *obj;			/* passed to every callback */
	struct sysfs_dir *parent;
	struct sysfs_dir *children;
	struct sysfs_dir *next;		/* sibling */
};

extern struct slub_lock sysfs_lock;

void sysfs_add_dir(struct sysfs_dir *parent, struct sysfs_dir *dir);
void sysfs_remove_dir(struct sysfs_dir *dir);
/* The directory at path, or NULL; the caller holds sysfs_lock. */
struct sysfs_dir *sysfs_dir_lookup(const char *path);
/* Files at the top of the namespace (one table: validate.c's). */
void sysfs_add_root_files(const struct slub_attr *attrs, unsigned int nr);

/* 1 if path names a directory, 0 a file, -ENOENT neither. */
int sysfs_is_dir(const char *path);

/* slub_sysfs_write() without bringing any layer up (init-time use). */
int __slub_sysfs_write(const char *path, const char *value);

/* Strict parsing of a written value: digits, optional trailing newline. */
int sysfs_parse_ulong(const char *val, unsigned long *out);
/* A delay in ms: -1 (never) or 0..max. */
int sysfs_parse_delay(const char *val, unsigned long max, long *out);

/* A per-CPU statistic: "<total> C0=<n> C1=<n>" (CPUs with n != 0). */
void sysfs_show_counter(struct seq_buf *s, pcpu_off_t off);
/* Writing 0 clears a statistic; anything else is -EINVAL. */
int sysfs_clear_counter(pcpu_off_t off, const char *val);

#endif /* SLUB_SYSFS_H */
