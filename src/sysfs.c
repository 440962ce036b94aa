// SPDX-License-Identifier: MIT
/* The sysfs-style namespace: lookup, listing, and the two public calls. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "init.h"
#include "sysfs.h"

#include <slub.h>

struct slub_lock sysfs_lock = SLUB_LOCK_INIT;

static struct sysfs_dir sysfs_root = { .name = "" };

void seq_printf(struct seq_buf *s, const char *fmt, ...)
{
	size_t room = s->len < s->size ? s->size - s->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? s->buf + s->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		s->len += (size_t)n;
}

__startup void sysfs_add_dir(struct sysfs_dir *parent, struct sysfs_dir *dir)
{
	struct sysfs_dir **p;

	if (!parent)
		parent = &sysfs_root;
	slub_lock(&sysfs_lock);
	dir->parent = parent;
	dir->children = NULL;
	/* Keep siblings sorted by name, as ls shows them. */
	for (p = &parent->children; *p && strcmp((*p)->name, dir->name) < 0;
	     p = &(*p)->next)
		;
	dir->next = *p;
	*p = dir;
	slub_unlock(&sysfs_lock);
}

/* The caller holds sysfs_lock: no store is running on dir's object. */
void sysfs_remove_dir(struct sysfs_dir *dir)
{
	struct sysfs_dir **p;

	for (p = &dir->parent->children; *p; p = &(*p)->next) {
		if (*p == dir) {
			*p = dir->next;
			break;
		}
	}
}

int sysfs_parse_ulong(const char *val, unsigned long *out)
{
	unsigned long v = 0;
	const char *s = val;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned long d = (unsigned long)(*s - '0');

		if (v > (~0UL - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

int sysfs_parse_delay(const char *val, unsigned long max, long *out)
{
	unsigned long v;

	if (val && (!strcmp(val, "-1") || !strcmp(val, "-1\n"))) {
		*out = -1;
		return 0;
	}
	if (sysfs_parse_ulong(val, &v) || v > max)
		return -EINVAL;
	*out = (long)v;
	return 0;
}

void sysfs_show_counter(struct seq_buf *s, pcpu_off_t off)
{
	unsigned int cpu;

	seq_printf(s, "%lu", percpu_counter_sum(off));
	for_each_possible_cpu(cpu) {
		unsigned long v = READ_ONCE(*(unsigned long *)per_cpu_ptr(off, cpu));

		if (v)
			seq_printf(s, " C%u=%lu", cpu, v);
	}
	seq_printf(s, "\n");
}

int sysfs_clear_counter(pcpu_off_t off, const char *val)
{
	unsigned long v;

	if (sysfs_parse_ulong(val, &v) || v != 0)
		return -EINVAL;
	percpu_counter_clear(off);
	return 0;
}

/*
 * Walk path from the root. Returns the directory reached; if the last
 * component names a file, *attr is set. NULL if nothing matches.
 */
static struct sysfs_dir *sysfs_lookup(const char *path,
				      const struct slub_attr **attr)
{
	struct sysfs_dir *dir = &sysfs_root;

	*attr = NULL;
	while (*path) {
		const char *end = strchr(path, '/');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		struct sysfs_dir *c;

		if (len == 0) {
			path++;
			continue;
		}
		for (c = dir->children; c; c = c->next)
			if (strlen(c->name) == len && !memcmp(c->name, path, len))
				break;
		if (c) {
			dir = c;
		} else {
			unsigned int i;

			for (i = 0; i < dir->nr_attrs; i++)
				if (strlen(dir->attrs[i].name) == len &&
				    !memcmp(dir->attrs[i].name, path, len))
					break;
			/* A file ends the path (a trailing '/' is not allowed). */
			if (i == dir->nr_attrs || end)
				return NULL;
			*attr = &dir->attrs[i];
			return dir;
		}
		path += len;
	}
	return dir;
}

/* The directory at path, or NULL; the caller holds sysfs_lock. */
struct sysfs_dir *sysfs_dir_lookup(const char *path)
{
	const struct slub_attr *attr;
	struct sysfs_dir *dir = sysfs_lookup(path, &attr);

	return attr ? NULL : dir;
}

__startup void sysfs_add_root_files(const struct slub_attr *attrs, unsigned int nr)
{
	slub_lock(&sysfs_lock);
	sysfs_root.attrs = attrs;
	sysfs_root.nr_attrs = nr;
	slub_unlock(&sysfs_lock);
}

static void sysfs_list(struct seq_buf *s, struct sysfs_dir *dir)
{
	struct sysfs_dir *c;

	for (c = dir->children; c; c = c->next)
		seq_printf(s, "%s/\n", c->name);
	for (unsigned int i = 0; i < dir->nr_attrs; i++)
		seq_printf(s, "%s\n", dir->attrs[i].name);
}

/*
 * The layers come up on first use; slab/ names the caches (and policy/
 * shows what they were sized with), so a path into either brings the slab
 * layer up (its kmalloc caches are always there), while
 * page_alloc/ alone leaves a program that uses only pages without slabs.
 */
static int sysfs_bring_up(const char *path)
{
	while (*path == '/')
		path++;
	if ((!strncmp(path, "slab", 4) && (path[4] == '\0' || path[4] == '/')) ||
	    (!strncmp(path, "policy", 6) && (path[6] == '\0' || path[6] == '/')))
		return slab_ready();
	return slub_init();
}

ssize_t slub_sysfs_read(const char *path, char *buf, size_t size)
{
	struct seq_buf s = { .buf = buf, .size = size };
	const struct slub_attr *attr;
	struct sysfs_dir *dir;

	if (!path || !buf || !size)
		return -EINVAL;
	if (sysfs_bring_up(path))
		return -ENOMEM;
	buf[0] = '\0';
	slub_lock(&sysfs_lock);
	dir = sysfs_lookup(path, &attr);
	if (dir && attr && attr->show)
		attr->show(&s, dir->obj, attr->arg);
	else if (dir && !attr)
		sysfs_list(&s, dir);
	slub_unlock(&sysfs_lock);
	if (!dir)
		return -ENOENT;
	/* A write-only file (shrink, drain): as -EPERM for read-only ones. */
	if (attr && !attr->show)
		return -EPERM;
	return (ssize_t)s.len;
}

int sysfs_is_dir(const char *path)
{
	const struct slub_attr *attr;
	struct sysfs_dir *dir;
	int ret;

	if (sysfs_bring_up(path))
		return -ENOMEM;
	slub_lock(&sysfs_lock);
	dir = sysfs_lookup(path, &attr);
	ret = !dir ? -ENOENT : !attr;
	slub_unlock(&sysfs_lock);
	return ret;
}

int slub_sysfs_write(const char *path, const char *value)
{
	if (!path || !value)
		return -EINVAL;
	if (sysfs_bring_up(path))
		return -ENOMEM;
	return __slub_sysfs_write(path, value);
}

int __slub_sysfs_write(const char *path, const char *value)
{
	const struct slub_attr *attr;
	struct sysfs_dir *dir;
	int ret;

	slub_lock(&sysfs_lock);
	dir = sysfs_lookup(path, &attr);
	if (!dir)
		ret = -ENOENT;
	else if (!attr)
		ret = -EISDIR;
	else if (!attr->store)
		ret = -EPERM;
	else
		ret = attr->store(dir->obj, attr->arg, value);
	slub_unlock(&sysfs_lock);
	return ret;
}
