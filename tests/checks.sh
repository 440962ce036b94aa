# Sourced by the test scripts: a private directory $tmp removed at exit,
# pass/fail counts, and the verdict line and exit status at the end.
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() {
	failed=$((failed + 1))
	echo "FAILED: $1"
}
verdict() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
