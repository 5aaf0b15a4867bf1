package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/vmtest"
)

// The systemd cases: where iomatrix puts its cgroups on a host whose PID 1
// is systemd, which owns the cgroup tree
// (docs/caps.md, "Where the cgroups live on cgroup v2"). The cases run as
// a service, vmtest.service, in /system.slice/vmtest.service; the login
// case logs in from there, so that its shell is in a session scope, as a
// root shell of any systemd host is. Neither is delegated.

// cappedReload's start_capped starts a capped run of drive $1 in the
// background, its output in /run/$2.out and .err, holds it (vmHoldRun)
// once its child is in its cgroup (held=), and prints the cgroup's
// io.max before and after a systemctl daemon-reload (during=, reload=);
// end_capped $2 releases the run, waits for it and prints its status
// (rc=), its output, and whether /iomatrix is left (left=). The reload's
// effects have no event to wait for: the second after it is the time
// they are given to show, the run held meanwhile.
const cappedReload = vmHoldRun + `start_capped() {
	iomatrix run $1 --rw randread --bs 4k --qd 8 --cap riops=300 --runtime 4s --ramp 0.5s >/run/$2.out 2>/run/$2.err &
	pid=$!
	hold $pid && echo held=yes || echo held=no
	echo during=$(cat /sys/fs/cgroup/iomatrix/*/io.max)
	systemctl daemon-reload && echo reloaded
	sleep 1
	echo reload=$(cat /sys/fs/cgroup/iomatrix/*/io.max)
}
end_capped() {
	release $pid
	wait $pid
	echo rc=$?
	cat /run/$1.out
	cat /run/$1.err >&2
	test -e /sys/fs/cgroup/iomatrix && echo left=yes || echo left=no
}
`

// The root case comes first, while systemd has not yet enabled io at the
// root for anyone (a delegated scope makes it do so), so that iomatrix
// enables it there itself and the daemon-reload is a real test of
// whether systemd takes it back.
const systemdRootCase = cappedReload + `echo self=$(cat /proc/self/cgroup)
echo before=$(cat /sys/fs/cgroup/cgroup.subtree_control)
start_capped $VMTEST_DRIVE0 root
echo rootsub=$(cat /sys/fs/cgroup/cgroup.subtree_control)
end_capped root
echo after=$(cat /sys/fs/cgroup/cgroup.subtree_control)
`

// The login case runs iomatrix from a login: runuser -l goes through PAM,
// whose pam_systemd registers the session with logind, which puts the
// shell in a session scope of user-0.slice, as for anybody who logs in
// on a systemd host. Such a scope is not delegated.
const systemdLoginCase = `cat >/run/login.sh <<'EOF'
` + cappedReload + `echo self=$(cat /proc/self/cgroup)
start_capped $1 login
end_capped login
echo after=$(cat /proc/self/cgroup)
EOF
runuser -l root -c "sh /run/login.sh $VMTEST_DRIVE0"
`

// The scope case runs the command as a user would; a watcher records
// which cgroups hold processes below the scope while it runs.
const systemdScopeCase = `echo self=$(cat /proc/self/cgroup)
cg=/sys/fs/cgroup/system.slice/iomx.scope
( while [ ! -e /run/stop ]; do find $cg/iomatrix -name cgroup.procs -exec grep -H . {} + 2>/dev/null; sleep 0.05; done >/run/watch ) &
systemd-run --scope -p Delegate=yes --unit=iomx iomatrix run $VMTEST_DRIVE0 --rw randread --bs 4k --qd 8 --cap riops=300 --runtime 2s --ramp 0.5s
echo rc=$?
touch /run/stop
wait
echo self=$(cat /proc/self/cgroup)
sort -u /run/watch
`

// The kept case holds the scope open with a process in a leaf of its own,
// so that what iomatrix leaves in the scope can be seen after it exits:
// its move back into the scope is the only way its leaf goes.
const systemdKeptCase = `cg=/sys/fs/cgroup/system.slice/kept.scope
systemd-run --scope -p Delegate=yes --unit=kept sh -c "mkdir $cg/keep && echo \$\$ >$cg/keep/cgroup.procs && exec sleep 300" &
for i in $(seq 100); do grep -q . $cg/keep/cgroup.procs 2>/dev/null && break; sleep 0.1; done
echo before=$(cat $cg/cgroup.subtree_control)
sh -c "echo \$\$ >$cg/cgroup.procs && echo inside=\$(cat /proc/self/cgroup) && exec iomatrix run $VMTEST_DRIVE0 --rw randread --bs 4k --qd 8 --cap riops=300 --runtime 2s --ramp 0.5s"
echo rc=$?
echo after=$(cat $cg/cgroup.subtree_control)
echo tree=$(cd $cg && find . -mindepth 1 -type d)
systemctl stop kept.scope
`

const systemdPidCase = `systemd-run --unit=x sleep 300
pid=$(systemctl show -p MainPID --value x.service)
echo before=$(cat /proc/$pid/cgroup)
iomatrix throttle --pid $pid --cap riops=100 --device $VMTEST_DRIVE0
echo rc=$?
echo after=$(cat /proc/$pid/cgroup)
test -e /sys/fs/cgroup/iomatrix && echo left=yes || echo left=no
systemctl stop x.service
`

// One boot of the systemd guest (internal/vmtest, Guest.Systemd) for the
// cases of docs/caps.md that depend on systemd owning the tree.
func TestVMSystemd(t *testing.T) {
	rs := vmtest.Boot(t, vmtest.Guest{Systemd: true, Drives: []vmtest.Drive{{Size: 1 << 30}}}, []vmtest.Case{
		{Name: "booted", Script: "cat /proc/1/comm; systemctl is-system-running; test -b \"$VMTEST_DRIVE0\" && echo drive"},
		{Name: "fails", Script: "echo to stderr >&2; exit 7"},
		{Name: "service-root", Script: systemdRootCase},
		{Name: "login-session", Script: systemdLoginCase},
		{Name: "delegated-scope", Script: systemdScopeCase},
		{Name: "scope-kept-open", Script: systemdKeptCase},
		{Name: "pid-of-a-service", Script: systemdPidCase},
	})
	for _, r := range rs {
		t.Logf("%s: exit %d in %v", r.Name, r.Exit, r.Elapsed)
	}
	const service = "0::/system.slice/vmtest.service"
	// The harness: systemd is PID 1 and the system is up, the spare drive
	// is there, and a failing case's status and stderr arrive intact.
	if r := rs[0]; r.Stdout != "systemd\nrunning\ndrive\n" {
		t.Errorf("booted: exit %d\n%s%s", r.Exit, r.Stdout, r.Stderr)
	}
	if r := rs[1]; r.Exit != 7 || r.Stderr != "to stderr\n" {
		t.Errorf("fails: %+v", r)
	}
	rs = rs[2:]

	t.Run("service-root", func(t *testing.T) {
		r := rs[0]
		v := lineValues(r.Stdout)
		dump := func() { t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr) }
		if v["self"] != service {
			t.Errorf("the cases run in %q, want %q", v["self"], service)
		}
		if v["rc"] != "0" {
			t.Errorf("iomatrix run exited %s, want 0", v["rc"])
		}
		// Not delegated: the real root, which the no-internal-process
		// rule exempts.
		if !strings.Contains(r.Stdout, "cgroup /sys/fs/cgroup/iomatrix/") {
			t.Errorf("the cap's cgroup is not below /iomatrix")
		}
		if v["held"] != "yes" {
			t.Errorf("the case could not hold the run while its cgroup was there")
		}
		if !strings.Contains(v["during"], "riops=300") {
			t.Errorf("io.max during the run: %q, want riops=300", v["during"])
		}
		if v["reload"] != v["during"] || !strings.Contains(v["rootsub"], "io") {
			t.Errorf("systemctl daemon-reload changed the cap: io.max %q, then %q; the root enables %q", v["during"], v["reload"], v["rootsub"])
		}
		checkCapped(t, r.Stdout, 300)
		if v["left"] != "no" {
			t.Errorf("/sys/fs/cgroup/iomatrix is still there after the run")
		}
		// What the root enables before and after: systemd's own
		// controllers, and whatever iomatrix enabled for its cgroups.
		t.Logf("the root's cgroup.subtree_control: before %q, during %q, after %q", v["before"], v["rootsub"], v["after"])
		if t.Failed() {
			dump()
		}
	})

	t.Run("login-session", func(t *testing.T) {
		r := rs[1]
		v := lineValues(r.Stdout)
		t.Logf("the login shell's cgroup: %s; io.max during the run: %s", v["self"], v["during"])
		if !regexp.MustCompile(`^0::/user\.slice/user-0\.slice/session-\w+\.scope$`).MatchString(v["self"]) {
			t.Errorf("the login shell runs in %q, not in a session scope of user-0.slice", v["self"])
		}
		if v["rc"] != "0" || v["after"] != v["self"] {
			t.Errorf("iomatrix run exited %s; the shell's cgroup before %q, after %q", v["rc"], v["self"], v["after"])
		}
		// A session scope is not delegated: the cgroups go to the root.
		if !strings.Contains(r.Stdout, "cgroup /sys/fs/cgroup/iomatrix/") {
			t.Errorf("the cap's cgroup is not below /iomatrix")
		}
		if v["held"] != "yes" {
			t.Errorf("the case could not hold the run while its cgroup was there")
		}
		if !strings.Contains(v["during"], "riops=300") || v["reload"] != v["during"] {
			t.Errorf("io.max during the run %q, after systemctl daemon-reload %q", v["during"], v["reload"])
		}
		checkCapped(t, r.Stdout, 300)
		if v["left"] != "no" {
			t.Errorf("/sys/fs/cgroup/iomatrix is still there after the run")
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		}
	})

	t.Run("delegated-scope", func(t *testing.T) {
		r := rs[2]
		if r.Exit != 0 || !strings.Contains(r.Stdout, "rc=0") {
			t.Errorf("systemd-run --scope -p Delegate=yes iomatrix run: exit %d", r.Exit)
		}
		// The case's shell stays where it was: only iomatrix is in the scope.
		if got := strings.Count(r.Stdout, "self="+service+"\n"); got != 2 {
			t.Errorf("the shell's cgroup before and after: %d of 2 lines say %s", got, service)
		}
		if !strings.Contains(r.Stdout, "cgroup /sys/fs/cgroup/system.slice/iomx.scope/iomatrix/") {
			t.Errorf("the cap's cgroup is not below the scope")
		}
		// iomatrix moved itself into its leaf <pid>-self below the scope,
		// as systemd's delegation rules ask.
		leaf := regexp.MustCompile(`iomx\.scope/iomatrix/(\d+)-self/cgroup\.procs:(\d+)`).FindStringSubmatch(r.Stdout)
		if leaf == nil || leaf[1] != leaf[2] {
			t.Errorf("no iomatrix process seen in its own leaf below the scope")
		}
		checkCapped(t, r.Stdout, 300)
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		}
	})

	t.Run("scope-kept-open", func(t *testing.T) {
		r := rs[3]
		v := lineValues(r.Stdout)
		if v["inside"] != "0::/system.slice/kept.scope" || v["rc"] != "0" {
			t.Errorf("iomatrix in the delegated scope: cgroup %q, exit %s", v["inside"], v["rc"])
		}
		if !strings.Contains(r.Stdout, "cgroup /sys/fs/cgroup/system.slice/kept.scope/iomatrix/") {
			t.Errorf("the cap's cgroup is not below the scope")
		}
		checkCapped(t, r.Stdout, 300)
		// Back in the scope before it exited: its leaf and directory are
		// gone, the controllers it enabled for them given up.
		if v["tree"] != "./keep" || v["after"] != v["before"] {
			t.Errorf("the scope after the run holds %q and enables %q, want ./keep and %q", v["tree"], v["after"], v["before"])
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		}
	})

	t.Run("pid-of-a-service", func(t *testing.T) {
		r := rs[4]
		v := lineValues(r.Stdout)
		const line = "the process runs in systemd unit x.service, which keeps it in its own cgroup"
		if v["rc"] != "2" || !strings.Contains(r.Stderr, line) {
			t.Errorf("throttle --pid of x.service's process: exit %s, want 2 with %q\nstderr:\n%s", v["rc"], line, r.Stderr)
		}
		if v["before"] != "0::/system.slice/x.service" || v["after"] != v["before"] || v["left"] != "no" {
			t.Errorf("the process's cgroup before %q, after %q; /iomatrix left: %s", v["before"], v["after"], v["left"])
		}
	})
}

// lineValues maps the key of each "key=value" line of out to its value;
// a later line wins.
func lineValues(out string) map[string]string {
	v := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, val, ok := strings.Cut(l, "="); ok && !strings.ContainsAny(k, " \t") {
			v[k] = val
		}
	}
	return v
}

// checkCapped checks a capped run's text output: read IOPS at the cap
// within 5 %, and the cgroup's counts equal to iomatrix's.
func checkCapped(t *testing.T, out string, capIOPS float64) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^read\s+([\d,]+)\s`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("no read IOPS in the output")
		return
	}
	iops, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if iops < capIOPS*0.95 || iops > capIOPS*1.05 {
		t.Errorf("read IOPS %v under riops=%v", iops, capIOPS)
	}
	c := regexp.MustCompile(`cgroup counted ([\d,]+) reads, ([\d,]+) writes; iomatrix completed ([\d,]+) reads, ([\d,]+) writes`).FindStringSubmatch(out)
	if c == nil || c[1] != c[3] || c[2] != c[4] {
		t.Errorf("the cgroup's counts against iomatrix's: %q", c)
	}
}
