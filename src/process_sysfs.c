// SPDX-License-Identifier: MIT
/*
 * process/ in the sysfs-style namespace: which process this is, so that a
 * report read over the control socket, or from an exit report, names it.
 */
#include <unistd.h>

#include "control.h"
#include "init.h"
#include "report.h"
#include "sysfs.h"

static void process_show(struct seq_buf *s, void *obj, long arg)
{
	char path[128];

	(void)obj;
	switch (arg) {
	case 0:
		seq_printf(s, "%ld\n", (long)getpid());
		break;
	case 1:
		seq_printf(s, "%s\n", slub_comm());
		break;
	case 2:
		control_path(path, sizeof(path));
		seq_printf(s, "%s\n", path);
		break;
	}
}

static const struct slub_attr process_attrs[] = {
	{ "pid", process_show, NULL, 0 },
	{ "comm", process_show, NULL, 1 },
	{ "control", process_show, NULL, 2 },	/* the socket, "" if none */
};

static struct sysfs_dir process_dir = {
	.name = "process",
	.attrs = process_attrs,
	.nr_attrs = ARRAY_SIZE(process_attrs),
};

__startup void process_sysfs_init(void)
{
	sysfs_add_dir(NULL, &process_dir);
}
