package sysfs

import (
	"errors"
	"testing"
)

// nvmeGeneric adds to ft an NVMe namespace as the 6.1 kernel shows it:
// the block device nvme0n1 (259:0) and its generic character device
// ng0n1 (242:0), both below the controller nvme0; and /dev/null's
// character device (1:3), of another class.
func nvmeGeneric(t *testing.T, ft fakeTree) string {
	t.Helper()
	ctrl := "pci0000:00/0000:00:04.0/nvme/nvme0"
	disk := ft.disk(t, ctrl, "nvme0n1", "259:0", "2097152", "[none] mq-deadline")
	// The fixture's disks live in a block/ directory; an NVMe namespace
	// lives right below its controller, which changes nothing read here.
	ft.write(t, disk+"/nsid", "1\n")
	ft.write(t, disk+"/queue/max_hw_sectors_kb", "512\n")
	ng := "sys/devices/" + ctrl + "/ng0n1"
	ft.write(t, ng+"/dev", "242:0\n")
	ft.mkdir(t, "sys/class/nvme-generic")
	ft.symlink(t, "../../../../../../class/nvme-generic", ng+"/subsystem")
	ft.symlink(t, "../../devices/"+ctrl+"/ng0n1", "sys/dev/char/242:0")
	ft.write(t, "sys/devices/virtual/mem/null/dev", "1:3\n")
	ft.mkdir(t, "sys/class/mem")
	ft.symlink(t, "../../../../class/mem", "sys/devices/virtual/mem/null/subsystem")
	ft.symlink(t, "../../devices/virtual/mem/null", "sys/dev/char/1:3")
	return disk
}

func TestNVMeGeneric(t *testing.T) {
	ft := newFakeTree(t)
	disk := nvmeGeneric(t, ft)
	g, err := ft.fs.NVMeGeneric(DevNum{242, 0})
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "ng0n1" || g.Disk.Name != "nvme0n1" || g.Disk.Dev != (DevNum{259, 0}) || g.Disk.SizeBytes != 1<<30 ||
		g.Disk.LogicalBlockSize != 512 || g.NSID != 1 || g.MaxHWSectorsKB != 512 || g.PassthroughStats || g.StatsAttr != "" {
		t.Errorf("ng0n1: %+v", g)
	}

	// A kernel that counts passthrough commands when asked to.
	for _, c := range []struct {
		attr  string
		count bool
	}{{"0", false}, {"1", true}} {
		ft.write(t, disk+"/queue/iostats_passthrough", c.attr+"\n")
		g, err := ft.fs.NVMeGeneric(DevNum{242, 0})
		if err != nil || g.PassthroughStats != c.count || g.StatsAttr != c.attr {
			t.Errorf("iostats_passthrough %s: %+v, %v", c.attr, g, err)
		}
	}

	for _, dev := range []DevNum{{1, 3}, {10, 200}} {
		if _, err := ft.fs.NVMeGeneric(dev); !errors.Is(err, ErrNotNVMeGeneric) {
			t.Errorf("%s: %v, want ErrNotNVMeGeneric", dev, err)
		}
	}
}
