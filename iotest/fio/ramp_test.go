package fio

import (
	"strings"
	"testing"
)

// With ramp_time, the I/Os in flight when the ramp ends complete after
// fio has reset its counters: their bytes are counted, the I/Os are not.
// Real fio output of such a run imports; the same mismatch without a ramp,
// or beyond what could have been in flight, is still refused.
func TestImportFioRampCarry(t *testing.T) {
	const file = "randread-ramp.json"
	raw := fioRaw(t, fioFixture(t, file))
	read := fioRawJobs(raw)[0]["read"].(map[string]any)
	ios, ioBytes := read["total_ios"].(float64), read["io_bytes"].(float64)
	carried := ioBytes/4096 - ios
	if carried <= 0 || carried > 16 {
		t.Fatalf("%s: %v bytes for %v I/Os: not a ramp carry of 1..16 I/Os; regenerate it", file, ioBytes, ios)
	}
	doc, problems := importFioBytes(t, file, fioFixture(t, file))
	if len(problems) != 0 || len(doc.Results) != 1 {
		t.Fatalf("problems %v, %d results", problems, len(doc.Results))
	}
	if got := doc.Results[0].Total; got.IOs != uint64(ios) || got.IOPS != read["iops"].(float64) {
		t.Errorf("total %+v, want fio's %v I/Os at %v IOPS", got, ios, read["iops"])
	}
	// Bytes and bandwidth are the measured window's, as the I/Os and IOPS
	// are: io_bytes and bw_bytes also hold the carried I/Os' bytes.
	r := doc.Results[0]
	iops, runtime := read["iops"].(float64), read["runtime"].(float64)/1000
	for what, got := range map[string]uint64{"read": r.Read.Bytes, "total": r.Total.Bytes} {
		if want := uint64(ios) * 4096; got != want {
			t.Errorf("%s bytes %d, want %d for %v I/Os of 4 KiB (fio's io_bytes %v)", what, got, want, ios, ioBytes)
		}
		if !closeRel(float64(got), iops*runtime*4096, 1e-6) {
			t.Errorf("%s bytes %d, IOPS × runtime × bs = %v", what, got, iops*runtime*4096)
		}
	}
	for what, got := range map[string]float64{"read": r.Read.MiBPerS, "total": r.Total.MiBPerS} {
		if want := iops * 4096 / (1 << 20); !closeRel(got, want, 1e-6) {
			t.Errorf("%s MiB/s %v, want IOPS × bs = %v", what, got, want)
		}
	}

	noRamp := editFioFixture(t, file, func(m map[string]any) {
		delete(fioRawJobs(m)[0]["job options"].(map[string]any), "ramp_time")
	})
	tooMany := editFioFixture(t, file, func(m map[string]any) {
		fioRawJobs(m)[0]["read"].(map[string]any)["io_bytes"] = (ios + 17) * 4096
	})
	for name, data := range map[string][]byte{"no ramp_time": noRamp, "more than iodepth": tooMany} {
		doc, problems := importFioBytes(t, name, data)
		if len(doc.Results) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Reason, "do not match bs=4096") {
			t.Errorf("%s: %d results, problems %v", name, len(doc.Results), problems)
		}
	}
}
