package observe

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

// asFlags is err's text as the command line words it: the option at
// fault first, and the options its message mentions, as --option.
func asFlags(err error) string {
	flag := func(option string) string { return "--" + option }
	msg := err.Error()
	var ie *fault.InputError
	if errors.As(err, &ie) && ie.Option != "" {
		msg = flag(ie.Option) + ": " + ie.Err.Error()
	}
	var m *fault.Mention
	if errors.As(err, &m) {
		if i := strings.LastIndex(msg, m.Error()); i >= 0 {
			msg = msg[:i] + m.Text(flag) + msg[i+len(m.Error()):]
		}
	}
	return msg
}

func (f *fixture) options() Options {
	return Options{Interval: time.Second, Window: DefaultWindow, SaveEvery: 10 * time.Second,
		SysFS: f.sys, ProcFS: f.proc, CgroupFS: f.cgroup}
}

// Every option is checked before any sampling, and bad input names the
// option at fault (and those its message mentions) as the command line
// spells them.
func TestOptionsRefused(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 0, 0, 0, 0, 0)
	for _, c := range []struct {
		name string
		set  func(o *Options)
		want string
	}{
		{"interval", func(o *Options) { o.Interval = 10 * time.Millisecond }, "--interval: 10ms is outside 100ms to 1m"},
		{"duration", func(o *Options) { o.Duration = -time.Second }, "--duration: -1s is negative"},
		{"window", func(o *Options) { o.Window = 10 * time.Second }, "--window: 10s is shorter than 1m"},
		{"save-every", func(o *Options) { o.Interval, o.SaveEveryGiven = 30*time.Second, true },
			"--save-every: 10s is shorter than --interval 30s"},
		{"cgroups", func(o *Options) { o.Cgroups = "all" }, `--cgroups: "all" is not auto (name cgroups one by one with --cgroup PATH=NAME)`},
		{"procfs", func(o *Options) { o.ProcFS = filepath.Join(f.proc, "none") }, "--procfs: " + filepath.Join(f.proc, "none") + " does not exist"},
		{"procfs not procfs", func(o *Options) { o.ProcFS = f.sys }, "--procfs: " + f.sys + " is not a procfs mount: it has no diskstats"},
		{"sysfs", func(o *Options) { o.SysFS = filepath.Join(f.sys, "none") }, "--sysfs: " + filepath.Join(f.sys, "none") + " does not exist"},
		{"sysfs not sysfs", func(o *Options) { o.SysFS = f.proc }, "--sysfs: " + f.proc + " is not a sysfs mount: it has no class/block"},
		{"device", func(o *Options) { o.Devices = []string{"nosuchdisk0"} }, "device nosuchdisk0: no such device in /proc/diskstats"},
		{"device twice", func(o *Options) { o.Devices = []string{"vda", "254:0"} }, "device 254:0: given twice: the same device as vda (254:0)"},
		{"cgroup twice", func(o *Options) { o.Cgroup = []string{"/a=x", "/a=y"} }, "--cgroup: /a=y: cgroup /a given twice (as x and y): its I/O would be counted twice"},
		{"root twice", func(o *Options) { o.Cgroup = []string{"/=a", "/=b"} }, "--cgroup: /=b: cgroup / given twice (as a and b)"},
		{"name twice", func(o *Options) { o.Cgroup = []string{"/a=x", "/b=x"} }, "--cgroup: /b=x: a second system named x (the first: /a)"},
		{"within the root", func(o *Options) { o.Cgroup = []string{"/=all", "/system.slice/a.service=a"} },
			"--cgroup: /system.slice/a.service=a: cgroup /system.slice/a.service and cgroup / (system all) lie one within the other"},
		{"around another", func(o *Options) { o.Cgroup = []string{"/system.slice/a.service=a", "/system.slice=all"} },
			"--cgroup: /system.slice=all: cgroup /system.slice and cgroup /system.slice/a.service (system a) lie one within the other"},
		{"name of two lines", func(o *Options) { o.Cgroup = []string{"/a=x\ny"} }, `--cgroup: "/a=x\ny": NAME "x\ny" holds a character that is not printable`},
		{"name of a path", func(o *Options) { o.Cgroup = []string{"/a\tb"} }, `--cgroup: "/a\tb": NAME "a\tb" holds a character that is not printable`},
		{"cgroups auto", func(o *Options) { o.Cgroups, o.CgroupFS = "auto", filepath.Join(f.cgroup, "none") },
			"--cgroups auto: no cgroup I/O controller (v1 blkio or v2 io) under " + filepath.Join(f.cgroup, "none")},
		{"cgroup", func(o *Options) { o.Cgroup, o.CgroupFS = []string{"/a"}, filepath.Join(f.cgroup, "none") }, "--cgroup: no cgroup I/O controller"},
		{"cgroup spec", func(o *Options) { o.Cgroup = []string{"=x"} }, `--cgroup: "=x": want PATH[=NAME]`},
		{"v1-enable-counters", func(o *Options) { o.EnableV1Counters = true },
			"--v1-enable-counters: only for cgroup v1, with --cgroup or --cgroups (this host's I/O controller: none asked for)"},
		{"v1-enable-counters on v2", func(o *Options) { o.EnableV1Counters, o.Cgroups = true, "auto" },
			"--v1-enable-counters: only for cgroup v1, with --cgroup or --cgroups (this host's I/O controller: cgroup v2, unified)"},
	} {
		o := f.options()
		c.set(&o)
		_, err := o.Config()
		if !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), c.want) {
			t.Errorf("%s: %v, worded %q; want bad input worded %q", c.name, err, asFlags(err), c.want)
		}
	}
}

// An observation of nothing is refused before any sampling: no device
// named, no system asked for, and none of diskstats' devices one that the
// selection takes; --all-devices, a DEVICE or a system makes it one.
func TestOptionsNothingToObserve(t *testing.T) {
	f := newFixture(t)
	f.disk(7, 9, "loop9", 0, 0, 0, 0, 0)
	_, err := f.options().Config()
	want := "nothing to observe: none of the 1 devices in diskstats is a disk this selection takes (name a DEVICE, or give --all-devices, --cgroup, --cgroups, --mysql or --postgres)"
	if !errors.As(err, new(*fault.InputError)) || asFlags(err) != want {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
	for _, set := range []func(o *Options){
		func(o *Options) { o.AllDevices = true },
		func(o *Options) { o.Devices = []string{"loop9"} },
		func(o *Options) { o.Cgroup = []string{"/a"} },
	} {
		o := f.options()
		set(&o)
		if _, err := o.Config(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// A configuration from good options: the defaults filled in, the devices
// and the cgroups resolved.
func TestOptionsConfig(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 0, 0, 0, 0, 0)
	o := f.options()
	o.Interval, o.SaveEvery = 20*time.Second, 10*time.Second // the default, shorter than the interval
	o.Devices, o.Cgroup = []string{"254:0"}, []string{"system.slice/a.service", filepath.Join(f.cgroup, "b") + "=bee"}
	cfg, err := o.Config()
	testenv.Must(t, err)
	if cfg.SaveEvery != o.Interval || len(cfg.Devices.Named) != 1 || cfg.Devices.Named[0].String() != "254:0" || cfg.Ctrl.Version != 2 {
		t.Errorf("save every %s, devices %v, cgroup v%d", cfg.SaveEvery, cfg.Devices.Named, cfg.Ctrl.Version)
	}
	if len(cfg.Cgroups) != 2 || cfg.Cgroups[0] != (CgroupSpec{"/system.slice/a.service", "a.service"}) || cfg.Cgroups[1] != (CgroupSpec{"/b", "bee"}) {
		t.Errorf("cgroups %v", cfg.Cgroups)
	}
	if !regexp.MustCompile(`^iomatrix-observe-\d{8}-\d{6}\.json$`).MatchString(cfg.Out) {
		t.Errorf("default out %q", cfg.Out)
	}
}

// A cgroup that cannot be read is bad input naming the cgroup option and
// the cgroup.
func TestNewRefusesCgroup(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 0, 0, 0, 0, 0)
	f.cg("/system.slice/a.service", 0, 0)
	o := f.options()
	o.Cgroup = []string{"/system.slice/a.service", "/system.slice/gone.service", "/other/a.service=other"}
	cfg, err := o.Config()
	testenv.Must(t, err)
	_, err = New(cfg)
	want := "--cgroup /system.slice/gone.service: no such cgroup, or it has no io.stat"
	if !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
	cfg.Cgroups = []CgroupSpec{cfg.Cgroups[0], {Path: "/system.slice/a.service", Name: "a.service"}}
	_, err = New(cfg)
	want = "--cgroup /system.slice/a.service: a second system of that name"
	if !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
}

// A bad database source is bad input; a server that cannot be reached is
// not, and its error names the option and the system and keeps its cause.
func TestOpenDatabasesRefused(t *testing.T) {
	var cfg Config
	err := cfg.OpenDatabases(context.Background(), []string{"erp=env:NO_SUCH_VAR"}, nil, env())
	if want := `--mysql: bad database source: env:NO_SUCH_VAR`; !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
	// Refused before either is dialled, which would fail otherwise.
	sock := filepath.Join(t.TempDir(), "none.sock")
	err = cfg.OpenDatabases(context.Background(), []string{"erp=erp@unix(" + sock + ")/", "erp=erp@unix(" + sock + "2)/"}, nil, env())
	if want := `--mysql: bad database source: system erp given twice`; !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
	err = cfg.OpenDatabases(context.Background(), []string{"erp=erp@unix(" + sock + ")/"}, nil, env())
	want := "--mysql erp: mysql erp@unix(" + sock + ")/: database unreachable"
	if errors.As(err, new(*fault.InputError)) || !errors.Is(err, ErrDatabaseUnreachable) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want an error worded %q", err, asFlags(err), want)
	}
	if cfg.Databases != nil {
		t.Errorf("databases %v after a failure", cfg.Databases)
	}
}

// A cgroup is counted once: one --cgroups auto finds where a system
// observes it already (or one within or around it) is left to that
// system, and a database whose server runs in a cgroup observed under
// another name is refused before any sampling.
func TestObserverCountsACgroupOnce(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 0, 0, 0, 0, 0)
	f.cg("/system.slice/a.service", 10, 0)
	f.cg("/system.slice/b.service", 5, 5)
	ctrl := cgroup.Controller{Mode: cgroup.Unified, Version: 2, Root: f.cgroup, Dir: f.cgroup, Name: "io"}
	cfg := Config{FS: sysfs.NewFS(f.sys, f.proc), Ctrl: ctrl, AutoCgroups: true, Interval: time.Second, Window: time.Hour,
		Cgroups: []CgroupSpec{{Path: "/system.slice/a.service", Name: "erp"}}}
	o, err := New(cfg)
	testenv.Must(t, err)
	testenv.Must(t, o.begin(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)))
	testenv.Must(t, o.sample(context.Background(), 0))
	var names []string
	for _, s := range o.build().Systems {
		names = append(names, s.Name+"="+s.Cgroup)
	}
	if strings.Join(names, " ") != "erp=/system.slice/a.service b.service=/system.slice/b.service" {
		t.Errorf("systems %q: a.service's I/O counted twice, or b.service missing", names)
	}
	cfg.AutoCgroups = false
	cfg.Databases = []DatabaseSource{{System: "db", DB: &fakeDB{}, Cgroup: "/system.slice/a.service"}}
	_, err = New(cfg)
	want := "--mysql db: its server runs in cgroup /system.slice/a.service, observed already as system erp"
	if !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
}
