package sysfs

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestDevNum(t *testing.T) {
	tests := []struct {
		in   string
		want DevNum
		err  bool
	}{
		{in: "254:0", want: DevNum{254, 0}},
		{in: " 259:1048575\n", want: DevNum{259, 1048575}},
		{in: "8", err: true},
		{in: "8:x", err: true},
		{in: "-1:0", err: true},
		{in: "4294967296:0", err: true},
	}
	for _, tt := range tests {
		got, err := ParseDevNum(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("ParseDevNum(%q) = %v, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDevNum(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}

	if s := (DevNum{254, 16}).String(); s != "254:16" {
		t.Errorf("String() = %q, want 254:16", s)
	}
	// Minors above 255 are encoded in split bit ranges of dev_t.
	for _, d := range []DevNum{{254, 0}, {8, 17}, {259, 300000}, {4095, 1048575}} {
		if got := DevNumFromDev(unix.Mkdev(d.Major, d.Minor)); got != d {
			t.Errorf("DevNumFromDev(Mkdev(%v)) = %v", d, got)
		}
	}
}

func TestParseDiskstats(t *testing.T) {
	const (
		line14 = "   8       0 sda 100 2 3000 40 500 6 7000 80 1 90 120\n"
		line18 = "   8       1 sda1 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25\n"
		line20 = " 254       0 vda 28455 5015 1260890 4711 2880 6452 517304 1534 0 3156 6564 3262 63 156368 287 519 30\n"
		// A future kernel may append counters; they must not break parsing.
		line22 = " 254      16 vdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n"
	)
	tests := []struct {
		name    string
		in      string
		want    map[DevNum]DiskStats
		wantErr string
	}{
		{
			name: "14 fields",
			in:   line14,
			want: map[DevNum]DiskStats{{8, 0}: {
				ReadIOs: 100, ReadMerges: 2, ReadSectors: 3000, ReadTicksMs: 40,
				WriteIOs: 500, WriteMerges: 6, WriteSectors: 7000, WriteTicksMs: 80,
				InFlight: 1, IOTicksMs: 90, TimeInQueueMs: 120,
			}},
		},
		{
			name: "18 fields",
			in:   line18,
			want: map[DevNum]DiskStats{{8, 1}: {
				ReadIOs: 11, ReadMerges: 12, ReadSectors: 13, ReadTicksMs: 14,
				WriteIOs: 15, WriteMerges: 16, WriteSectors: 17, WriteTicksMs: 18,
				InFlight: 19, IOTicksMs: 20, TimeInQueueMs: 21, DiscardIOs: 22, DiscardMerges: 23, DiscardSectors: 24, DiscardTicksMs: 25,
			}},
		},
		{
			name: "20 fields",
			in:   line20,
			want: map[DevNum]DiskStats{{254, 0}: {
				ReadIOs: 28455, ReadMerges: 5015, ReadSectors: 1260890, ReadTicksMs: 4711,
				WriteIOs: 2880, WriteMerges: 6452, WriteSectors: 517304, WriteTicksMs: 1534,
				InFlight: 0, IOTicksMs: 3156, TimeInQueueMs: 6564, DiscardIOs: 3262, DiscardMerges: 63, DiscardSectors: 156368, DiscardTicksMs: 287, FlushIOs: 519, FlushTicksMs: 30,
			}},
		},
		{
			name: "longer than known",
			in:   line22,
			want: map[DevNum]DiskStats{{254, 16}: {
				ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicksMs: 4,
				WriteIOs: 5, WriteMerges: 6, WriteSectors: 7, WriteTicksMs: 8,
				InFlight: 9, IOTicksMs: 10, TimeInQueueMs: 11, DiscardIOs: 12, DiscardMerges: 13, DiscardSectors: 14, DiscardTicksMs: 15, FlushIOs: 16, FlushTicksMs: 17,
			}},
		},
		{
			name: "mixed with blank line",
			in:   line14 + "\n" + line20,
			want: map[DevNum]DiskStats{
				{8, 0}: {
					ReadIOs: 100, ReadMerges: 2, ReadSectors: 3000, ReadTicksMs: 40,
					WriteIOs: 500, WriteMerges: 6, WriteSectors: 7000, WriteTicksMs: 80,
					InFlight: 1, IOTicksMs: 90, TimeInQueueMs: 120,
				},
				{254, 0}: {
					ReadIOs: 28455, ReadMerges: 5015, ReadSectors: 1260890, ReadTicksMs: 4711,
					WriteIOs: 2880, WriteMerges: 6452, WriteSectors: 517304, WriteTicksMs: 1534,
					IOTicksMs: 3156, TimeInQueueMs: 6564, DiscardIOs: 3262, DiscardMerges: 63, DiscardSectors: 156368, DiscardTicksMs: 287, FlushIOs: 519, FlushTicksMs: 30,
				},
			},
		},
		{name: "empty", in: "", want: map[DevNum]DiskStats{}},
		{
			// Pre-2.6.25 partition lines had 4 counters.
			name:    "old partition layout",
			in:      line14 + "   8    1 sda1 1 2 3 4\n",
			wantErr: "line 2: 7 fields",
		},
		{name: "between layouts", in: "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12\n", wantErr: "line 1: 15 fields"},
		{name: "bad counter", in: "8 0 sda 1 2 3 x 5 6 7 8 9 10 11\n", wantErr: "line 1: sda field 7"},
		{name: "bad major", in: "a 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", wantErr: "line 1: device number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDiskstats(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Mount
		wantErr string
	}{
		{
			name: "no optional fields",
			in:   "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n",
			want: []Mount{{Dev: DevNum{254, 0}, Root: "/", MountPoint: "/", FSType: "ext4", Source: "/dev/vda"}},
		},
		{
			name: "several optional fields",
			in:   "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 propagate_from:2 - ext3 /dev/root rw,errors=continue\n",
			want: []Mount{{Dev: DevNum{98, 0}, Root: "/mnt1", MountPoint: "/mnt2", FSType: "ext3", Source: "/dev/root"}},
		},
		{
			name: "escapes",
			in: `40 27 254:1 /data\040dir /mnt/my\040disk\011tab\134slash rw shared:3 - xfs /dev/disk/by-label/my\040label rw` + "\n" +
				`41 27 254:2 / /mnt/odd\400\04 rw - xfs /dev/vda2 rw` + "\n",
			want: []Mount{
				{Dev: DevNum{254, 1}, Root: "/data dir", MountPoint: "/mnt/my disk\ttab\\slash", FSType: "xfs", Source: "/dev/disk/by-label/my label"},
				// Malformed escapes are kept verbatim.
				{Dev: DevNum{254, 2}, Root: "/", MountPoint: `/mnt/odd\400\04`, FSType: "xfs", Source: "/dev/vda2"},
			},
		},
		{
			name: "empty source",
			in:   "50 27 0:45 / /mnt/t rw - tmpfs  rw,size=4k\n",
			want: []Mount{{Dev: DevNum{0, 45}, Root: "/", MountPoint: "/mnt/t", FSType: "tmpfs", Source: ""}},
		},
		{
			name: "mount point named like the separator",
			in:   "51 27 0:46 / - rw - tmpfs tmpfs rw\n",
			want: []Mount{{Dev: DevNum{0, 46}, Root: "/", MountPoint: "-", FSType: "tmpfs", Source: "tmpfs"}},
		},
		{name: "empty", in: "", want: nil},
		{
			name:    "no separator",
			in:      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n28 27 0:25 / /x rw tmpfs none rw\n",
			wantErr: "line 2: missing",
		},
		{name: "truncated tail", in: "27 1 254:0 / / rw - ext4\n", wantErr: "line 1: 1 fields after separator"},
		{name: "bad device", in: "27 1 254 / / rw - ext4 /dev/vda rw\n", wantErr: "line 1: device number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMountinfo(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseSwaps(t *testing.T) {
	in := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
		"/dev/vdb                                partition\t1048572\t\t0\t\t-2\n" +
		"/swap\\040file                          file\t\t65532\t\t0\t\t-3\n"
	got, err := ParseSwaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []SwapEntry{{Filename: "/dev/vdb", Type: "partition"}, {Filename: "/swap file", Type: "file"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// A machine without swap shows only the header.
	got, err = ParseSwaps(strings.NewReader("Filename\tType\tSize\tUsed\tPriority\n"))
	if err != nil || len(got) != 0 {
		t.Errorf("header only: got %+v, %v; want no entries", got, err)
	}

	if _, err := ParseSwaps(strings.NewReader("Filename Type\n/dev/vdb\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("short line: err = %v, want a line 2 error", err)
	}
}

func TestParseScheduler(t *testing.T) {
	tests := map[string]string{
		"none [mq-deadline] kyber bfq": "mq-deadline",
		"[none] mq-deadline kyber bfq": "none",
		"mq-deadline kyber [bfq]\n":    "bfq",
		"none":                         "none",
		"":                             "none",
		"[]":                           "none",
	}
	for in, want := range tests {
		if got := ParseScheduler(in); got != want {
			t.Errorf("ParseScheduler(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrNoDeviceIsNotExist(t *testing.T) {
	if !errors.Is(ErrNoDevice, os.ErrNotExist) {
		t.Error("ErrNoDevice does not match os.ErrNotExist")
	}
}

func TestParseMaps(t *testing.T) {
	const in = `558ff0500000-558ff0502000 r--p 00000000 fe:00 247026                     /usr/bin/cat
558ff0502000-558ff0507000 r-xp 00002000 fe:00 247026                     /usr/bin/cat
558ff133c000-558ff135d000 rw-p 00000000 00:00 0                          [heap]
7fb8937b0000-7fb8937d2000 rw-p 00000000 00:00 0 
7fb893a18000-7fb893a1f000 r--s 00000000 103:0a 325737                    /opt/my dir/gconv (deleted)
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`
	got, err := ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x558ff0500000, End: 0x558ff0502000, Perms: "r--p", Dev: DevNum{254, 0}, Inode: 247026, Path: "/usr/bin/cat"},
		{Start: 0x558ff0502000, End: 0x558ff0507000, Perms: "r-xp", Offset: 0x2000, Dev: DevNum{254, 0}, Inode: 247026, Path: "/usr/bin/cat"},
		{Start: 0x558ff133c000, End: 0x558ff135d000, Perms: "rw-p", Path: "[heap]"},
		{Start: 0x7fb8937b0000, End: 0x7fb8937d2000, Perms: "rw-p"},
		{Start: 0x7fb893a18000, End: 0x7fb893a1f000, Perms: "r--s", Dev: DevNum{259, 10}, Inode: 325737, Path: "/opt/my dir/gconv (deleted)"},
		{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseMaps:\n got %+v\nwant %+v", got, want)
	}
	var backed []string
	for _, m := range got {
		if m.FileBacked() {
			backed = append(backed, m.Path)
		}
	}
	if !reflect.DeepEqual(backed, []string{"/usr/bin/cat", "/usr/bin/cat", "/opt/my dir/gconv (deleted)"}) {
		t.Errorf("file-backed: %q", backed)
	}
	for _, bad := range []string{
		"558ff0500000 r--p 00000000 fe:00 1 /x",    // no range
		"558ff0500000-zz r--p 00000000 fe:00 1 /x", // bad end
		"2000-1000 r--p 00000000 fe:00 1 /x",       // backwards
		"1000-2000 r-p 00000000 fe:00 1 /x",        // short perms
		"1000-2000 r--p 0000000g fe:00 1 /x",       // bad offset
		"1000-2000 r--p 00000000 fe00 1 /x",        // bad device
		"1000-2000 r--p 00000000 fe:00 x /x",       // bad inode
		"1000-2000 r--p 00000000",                  // too few fields
	} {
		if _, err := ParseMaps(strings.NewReader("1000-2000 r--p 00000000 00:00 0\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("ParseMaps(%q) = %v, want an error naming line 2", bad, err)
		}
	}
}

// A mapping's AnonHugePages is found by the mapping's start address,
// first in the file or not, and never another mapping's.
func TestParseSmapsAnonHuge(t *testing.T) {
	const smaps = `7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      4096 kB
7f0000400000-7f0000404000 rw-p 00000000 00:00 0
Size:                 16 kB
AnonHugePages:         0 kB
7f0000404000-7f0000408000 rw-p 00000000 00:00 0
Size:                 16 kB
`
	for _, c := range []struct {
		start uint64
		want  int
		err   string
	}{
		{0x7f0000000000, 4 << 20, ""},
		{0x7f0000400000, 0, ""},
		{0x7f0000001000, 0, "no mapping starts at 0x7f0000001000"},
		{0x7f0000404000, 0, "no AnonHugePages"},
	} {
		got, err := ParseSmapsAnonHuge([]byte(smaps), c.start)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%#x: %d, %v; want an error %q", c.start, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%#x: %d, %v; want %d", c.start, got, err, c.want)
		}
	}
}

// A thread's CPU time: schedstat's first field in ns; stat's utime and
// stime in ticks, after a command that may hold spaces and parentheses.
// Its wait on a run queue: schedstat's second field. kthreadd's children:
// pids.
func TestParseTaskCPU(t *testing.T) {
	if d, err := ParseSchedstat([]byte("123456789 42 7\n")); err != nil || d != 123456789 {
		t.Errorf("schedstat: %v, %v", d, err)
	}
	if _, err := ParseSchedstat([]byte("\n")); err == nil {
		t.Error("empty schedstat accepted")
	}
	if d, err := ParseRunDelay([]byte("123456789 4242 7\n")); err != nil || d != 4242 {
		t.Errorf("run delay: %v, %v", d, err)
	}
	for in, want := range map[string]string{"123\n": "1 fields", "1 x 2\n": `run delay "x"`, "1 -5 2\n": `"-5"`} {
		if _, err := ParseRunDelay([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run delay of %q: %v; want an error %q", in, err, want)
		}
	}
	if got, err := ParseChildren([]byte("3 4 14 \n")); err != nil || !reflect.DeepEqual(got, []int{3, 4, 14}) {
		t.Errorf("children: %v, %v", got, err)
	}
	if got, err := ParseChildren(nil); err != nil || len(got) != 0 {
		t.Errorf("no children: %v, %v", got, err)
	}
	if _, err := ParseChildren([]byte("3 four")); err == nil {
		t.Error("a name among the pids accepted")
	}
	stat := "77 (a (b) c) S 1 77 77 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 100 0 0\n"
	if d, err := ParseStatCPU([]byte(stat)); err != nil || d != 420*time.Millisecond {
		t.Errorf("stat: %v, %v; want 42 ticks", d, err)
	}
	if _, err := ParseStatCPU([]byte("77 (x) S 1 2 3")); err == nil {
		t.Error("a short stat accepted")
	}
}

// The machine's busy time: /proc/stat's first line, user, nice, system,
// irq, softirq and steal ticks; idle, iowait and guest (already in user)
// not counted.
func TestParseMachineBusy(t *testing.T) {
	stat := "cpu  100 20 30 5000 90 4 6 40 77 7\ncpu0 50 10 15 2500 45 2 3 20 0 0\nintr 12 3\n"
	if d, err := ParseMachineBusy([]byte(stat)); err != nil || d != 2*time.Second {
		t.Errorf("busy %v, %v; want 200 ticks", d, err)
	}
	if m, err := ParseMachineTimes([]byte(stat)); err != nil || m != (MachineTimes{Busy: 2 * time.Second, Steal: 400 * time.Millisecond, Idle: 50900 * time.Millisecond}) || m.Total() != 52900*time.Millisecond {
		t.Errorf("times %+v, %v; want busy 200, steal 40, idle 5,090 ticks", m, err)
	}
	// An older kernel's eight fields.
	if d, err := ParseMachineBusy([]byte("cpu 1 1 1 9 9 1 1 1\n")); err != nil || d != 60*time.Millisecond {
		t.Errorf("eight fields: %v, %v", d, err)
	}
	for in, want := range map[string]string{"cpu0 1 2 3 4 5 6 7 8\n": `"cpu0"`, "cpu 1 2 3\n": "3 times", "cpu 1 x 3 4 5 6 7 8\n": `field 2 "x"`, "": "0 times"} {
		if _, err := ParseMachineBusy([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error %s", in, err, want)
		}
	}
}

func TestRequestsPerIO(t *testing.T) {
	for _, tc := range []struct {
		kb, segs, bs int64
		want         int
	}{
		{0, 0, 1 << 20, 1},       // nothing known
		{1280, 128, 16 << 10, 1}, // small I/O
		{4096, 254, 1 << 20, 2},  // virtio: 256 pages in 254 segments
		{1280, 128, 1 << 20, 2},  // 1 MiB in 1280 KiB requests of 128 pages
		{512, 0, 1 << 20, 2},     // max_sectors_kb alone
		{128, 256, 1 << 20, 8},   // a small request size
		{4096, 254, 4 << 20, 5},  // 1024 pages
	} {
		if got := (BlockDevice{MaxSectorsKB: tc.kb, MaxSegments: tc.segs}).RequestsPerIO(tc.bs); got != tc.want {
			t.Errorf("RequestsPerIO(%d KiB, %d segments, %d) = %d, want %d", tc.kb, tc.segs, tc.bs, got, tc.want)
		}
	}
}

func TestFilesystemName(t *testing.T) {
	for _, c := range []struct {
		magic int64
		want  string
	}{
		{unix.PROC_SUPER_MAGIC, "proc"},
		{unix.SYSFS_MAGIC, "sysfs"},
		{unix.TMPFS_MAGIC, "tmpfs"},
		{unix.OVERLAYFS_SUPER_MAGIC, "overlay"},
		{unix.NFS_SUPER_MAGIC, "nfs"},
		{unix.EXT4_SUPER_MAGIC, "ext4"},
		{unix.CGROUP2_SUPER_MAGIC, "cgroup2"},
		{0x1234abcd, "0x1234abcd"},
	} {
		if got := FilesystemName(c.magic); got != c.want {
			t.Errorf("FilesystemName(%#x) = %q, want %q", c.magic, got, c.want)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	in := "12:blkio:/user.slice\n1:name=systemd:/init.scope\n0::/user.slice/user-0.slice/session-1.scope\n"
	got, err := ParseProcCgroup(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []CgroupEntry{
		{ID: 12, Controllers: []string{"blkio"}, Path: "/user.slice"},
		{ID: 1, Controllers: []string{"name=systemd"}, Path: "/init.scope"},
		{ID: 0, Path: "/user.slice/user-0.slice/session-1.scope"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"0:/x", "x::/", "0::relative", "-1::/"} {
		if _, err := ParseProcCgroup(strings.NewReader("0::/\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v, want an error naming line 2", bad, err)
		}
	}
}
