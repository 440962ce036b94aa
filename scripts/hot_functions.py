# SPDX-License-Identifier: MIT
#
# gdb extension for scripts/hot-functions.sh: a breakpoint on each function
# named in $HOT_ALL that, on its first hit, appends the name to $HOT_OUT
# and disables itself, so the program runs at nearly full speed after
# its first call of each function. The file keeps the order of first
# calls across every program the script runs, start-up first.
import os

import gdb

hot_out = os.environ["HOT_OUT"]
seen = set()
if os.path.exists(hot_out):
    with open(hot_out) as f:
        seen.update(line.strip() for line in f)


class FirstCall(gdb.Breakpoint):
    def __init__(self, name):
        # Names such as "apply.isra.0" need quoting as a location.
        super().__init__("'%s'" % name if "." in name else name, internal=True)
        self.name = name

    def stop(self):
        self.enabled = False
        if self.name not in seen:
            seen.add(self.name)
            with open(hot_out, "a") as f:
                f.write(self.name + "\n")
        return False


gdb.execute("set breakpoint pending on")
gdb.execute("set pagination off")
gdb.execute("set confirm off")
with open(os.environ["HOT_ALL"]) as f:
    for line in f:
        name = line.strip()
        if name and name not in seen:
            try:
                FirstCall(name)
            except gdb.error:
                pass
