package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/hist"
	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// ErrNotFio marks input that is not fio's JSON output.
var ErrNotFio = errors.New("not fio JSON output")

// ErrBadFigure marks fio's output with a figure fio never reports: a
// negative rate, latency, CPU share or time.
var ErrBadFigure = errors.New("not a figure fio reports")

// ProfileName is the settings.profile of documents imported from fio.
const ProfileName = "fio-import"

// Problem is a fio job that could not be mapped to an iomatrix
// pattern. It is reported instead of guessed so that a matrix never shows a
// cell that was measured under different conditions than its name says.
type Problem struct {
	Job    string
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("fio job %q: %s", p.Job, p.Reason)
}

// Import reads fio's --output-format=json or json+ output (fio 3.x) and
// returns an iomatrix results document. name labels errors (the file name).
//
// Lines before the JSON document (fio prints notices such as "note: ..." or
// "fio: ..." on stdout) are skipped; anything after it is ignored.
//
// Each fio job becomes one Result. Without group_reporting fio prints one
// entry per thread: entries with the same group, job name and options are
// summed into one Result. Jobs that cannot be expressed as an iomatrix
// pattern come back as problems, not as results: trims, mixed or ranged
// block sizes, zoned, rate-limited or buffered (direct=0) jobs, jobs fio
// reports an error for, jobs that ran concurrently in one stonewall group,
// and entries whose I/O counts contradict their options (verify phases, or
// group_reporting over different job sections, which fio labels with the
// options of one of them only). A second job with the same pattern name is
// reported too, so that names stay unique.
//
// Choices that differ from a plain copy of fio's numbers:
//   - Latency is fio's completion latency (clat_ns). When threads are summed,
//     min, max and the sample-weighted mean are exact; percentiles are
//     recomputed from json+ bins exactly as fio does, and left at 0 without
//     bins, since percentiles of separate threads cannot be combined.
//     With json+ bins the latency keeps its whole histogram (fio's buckets
//     are iomatrix's), the threads' bins merged.
//   - CPU is the whole pattern's use in percent of one CPU, as iomatrix
//     measures its own process: separate threads are summed, and a
//     group_reporting entry (fio's runtime-weighted per-thread average) is
//     multiplied by its number of threads.
//   - fio's "timestamp" is taken when fio prints its report, after the run:
//     it becomes finished_at, and started_at is that minus fio's elapsed
//     seconds.
//   - disk_util covers the whole fio run, so device counters are filled in
//     only when the file holds a single result.
//   - Bytes and MiB/s are those of the measured window: with ramp_time,
//     fio's io_bytes and bw_bytes also count the bytes of the I/Os in
//     flight when the ramp ended, which its I/O count and IOPS leave out,
//     so bytes = I/Os × block size = IOPS × runtime × block size.
//   - queue_depth is fio's iodepth, except for synchronous engines (psync,
//     sync, pvsync, pvsync2, vsync), where fio itself caps the depth at 1:
//     the result records the depth that was measured, not the one asked for.
func Import(name string, r io.Reader) (*results.Document, []Problem, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		if errors.As(err, new(*fs.PathError)) {
			return nil, nil, err // it names the file already
		}
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	out, err := decodeFioOutput(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	doc, problems := out.document()
	return doc, problems, nil
}

// Merge concatenates the results of several imported documents, e.g.
// one fio file per pattern. Pattern names must be unique across them.
func Merge(docs []*results.Document) (*results.Document, error) {
	if len(docs) == 0 {
		return nil, errors.New("merge imports: no documents")
	}
	for i, d := range docs {
		if d == nil {
			return nil, fmt.Errorf("merge imports: document %d is nil", i+1)
		}
	}
	first := docs[0]
	merged := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Tool:          results.Tool{Name: "iomatrix", Version: results.Version},
		StartedAt:     first.StartedAt,
		FinishedAt:    first.FinishedAt,
		Host:          first.Host,
		Target:        first.Target,
		Settings:      first.Settings,
		Results:       []results.Result{},
	}
	seen := map[string]int{} // result name -> index of its document
	for i, d := range docs {
		// RFC3339 strings in UTC compare in time order.
		if d.StartedAt != "" && (merged.StartedAt == "" || d.StartedAt < merged.StartedAt) {
			merged.StartedAt = d.StartedAt
		}
		if d.FinishedAt > merged.FinishedAt {
			merged.FinishedAt = d.FinishedAt
		}
		if d.Target.Path != merged.Target.Path {
			merged.Target = results.TargetInfo{}
		}
		if d.Settings.Engine != merged.Settings.Engine {
			merged.Settings.Engine = ""
		}
		if d.Host != merged.Host {
			merged.Host = results.Host{}
		}
		for _, res := range d.Results {
			if o, dup := seen[res.Name]; dup {
				return nil, fmt.Errorf("merge imports: pattern %s is in document %d (%s) and in document %d (%s)",
					res.Name, o+1, fioDocLabel(docs[o]), i+1, fioDocLabel(d))
			}
			seen[res.Name] = i
			merged.Results = append(merged.Results, res)
		}
	}
	return merged, nil
}

func fioDocLabel(d *results.Document) string {
	label := d.Target.Path
	if label == "" {
		label = "no target"
	}
	if d.FinishedAt != "" {
		label += ", finished " + d.FinishedAt
	}
	return label
}

// fioOutput is the part of fio's JSON report that maps to a results file.
type fioOutput struct {
	Version   string         `json:"fio version"`
	Timestamp int64          `json:"timestamp"`
	Global    map[string]any `json:"global options"`
	Jobs      []fioJob       `json:"jobs"`
	DiskUtil  []fioDiskUtil  `json:"disk_util"`
}

type fioJob struct {
	Name       string         `json:"jobname"`
	GroupID    int            `json:"groupid"`
	Error      int            `json:"error"`
	Elapsed    int64          `json:"elapsed"` // seconds since fio started
	Options    map[string]any `json:"job options"`
	Read       *fioDir        `json:"read"`
	Write      *fioDir        `json:"write"`
	Trim       *fioDir        `json:"trim"`
	Sync       *fioSyncDir    `json:"sync"`
	JobRuntime int64          `json:"job_runtime"` // ms, summed over a group's threads
	UsrCPU     float64        `json:"usr_cpu"`
	SysCPU     float64        `json:"sys_cpu"`
}

type fioDir struct {
	IOBytes  uint64   `json:"io_bytes"`
	BWBytes  *uint64  `json:"bw_bytes"` // bytes/s, absent before fio 3
	BW       uint64   `json:"bw"`       // KiB/s
	IOPS     float64  `json:"iops"`
	Runtime  int64    `json:"runtime"` // ms
	TotalIOs uint64   `json:"total_ios"`
	ShortIOs uint64   `json:"short_ios"`
	Clat     *fioClat `json:"clat_ns"`
}

// fioSyncDir is a job's syncs (fsync, fdatasync): their count and
// latency, apart from the writes' (whose clat_ns leaves them out).
type fioSyncDir struct {
	TotalIOs uint64   `json:"total_ios"`
	Lat      *fioClat `json:"lat_ns"`
}

type fioClat struct {
	Min        uint64            `json:"min"`
	Max        uint64            `json:"max"`
	Mean       float64           `json:"mean"`
	N          uint64            `json:"N"`
	Percentile map[string]uint64 `json:"percentile"`
	Bins       map[string]uint64 `json:"bins"` // json+ only
}

type fioDiskUtil struct {
	Name     string  `json:"name"`
	ReadIOs  uint64  `json:"read_ios"`
	WriteIOs uint64  `json:"write_ios"`
	Util     float64 `json:"util"`
}

// decodeFioOutput finds the JSON document after fio's notice lines and
// checks that it is fio's.
func decodeFioOutput(data []byte) (*fioOutput, error) {
	start := -1
	for off := 0; off < len(data); {
		line := data[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if t := bytes.TrimLeft(line, " \t\r\ufeff"); len(t) > 0 && t[0] == '{' {
			start = off + len(line) - len(t)
			break
		}
		off += len(line)
	}
	if start < 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, fmt.Errorf("%w: empty input", ErrNotFio)
		}
		return nil, fmt.Errorf("%w: no JSON object found", ErrNotFio)
	}
	var raw json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data[start:])).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFio, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFio, err)
	}
	if _, ok := top["fio version"]; !ok {
		return nil, fmt.Errorf("%w: no \"fio version\"", ErrNotFio)
	}
	if _, ok := top["jobs"]; !ok {
		return nil, fmt.Errorf("%w: no \"jobs\"", ErrNotFio)
	}
	var out fioOutput
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFio, err)
	}
	return &out, out.check()
}

// check refuses figures fio never reports, which would become a results
// document's figures: a negative rate, latency, CPU share or time.
func (out *fioOutput) check() error {
	for _, j := range out.Jobs {
		for _, f := range j.figures() {
			if !(f.value >= 0) || math.IsInf(f.value, 0) {
				return fmt.Errorf("fio job %q: %s is %g: %w", j.Name, f.name, f.value, ErrBadFigure)
			}
		}
	}
	for _, d := range out.DiskUtil {
		if !(d.Util >= 0) || math.IsInf(d.Util, 0) {
			return fmt.Errorf("disk_util %q: util is %g: %w", d.Name, d.Util, ErrBadFigure)
		}
	}
	return nil
}

// fioFigure is a figure of fio's report, by the name fio gives it.
type fioFigure struct {
	name  string
	value float64
}

// figures are the job's figures that are never negative.
func (j *fioJob) figures() []fioFigure {
	fs := []fioFigure{{"usr_cpu", j.UsrCPU}, {"sys_cpu", j.SysCPU}, {"job_runtime", float64(j.JobRuntime)}, {"elapsed", float64(j.Elapsed)}}
	for _, d := range []struct {
		name string
		dir  *fioDir
	}{{"read", j.Read}, {"write", j.Write}, {"trim", j.Trim}} {
		if d.dir == nil {
			continue
		}
		fs = append(fs, fioFigure{d.name + " iops", d.dir.IOPS}, fioFigure{d.name + " runtime", float64(d.dir.Runtime)})
		if d.dir.Clat != nil {
			fs = append(fs, fioFigure{d.name + " clat_ns mean", d.dir.Clat.Mean})
		}
	}
	return fs
}

// fioJobGroup is one fio job: a group_reporting entry, or the entries of
// its threads when fio reported them one by one.
type fioJobGroup struct {
	name    string
	groupID int
	opts    map[string]string // global options overridden by job options
	entries []*fioJob
}

func (out *fioOutput) document() (*results.Document, []Problem) {
	groups := out.jobGroups()
	doc := &results.Document{
		SchemaVersion: results.SchemaVersion,
		Tool:          results.Tool{Name: "iomatrix", Version: results.Version},
		Settings:      results.Settings{Profile: ProfileName},
	}
	doc.StartedAt, doc.FinishedAt = out.runTimes()
	if len(groups) > 0 {
		doc.Settings.Engine = fioEngine(groups[0].opts)
		doc.Target = fioTarget(groups)
	}
	var problems []Problem
	doc.Results, problems = fioResults(groups)
	if len(out.DiskUtil) > 0 {
		d := out.DiskUtil[0]
		doc.Target.Disk = d.Name
		if len(doc.Results) == 1 {
			doc.Results[0].Device = results.DevStats{IOs: d.ReadIOs + d.WriteIOs, UtilPct: d.Util}
		}
	}
	return doc, problems
}

// jobGroups gathers the report's entries into jobs, in the order fio
// reported them: entries with the same group, job name and options are the
// threads of one job.
func (out *fioOutput) jobGroups() []*fioJobGroup {
	global := fioOptionStrings(out.Global)
	var groups []*fioJobGroup
	byKey := map[string]*fioJobGroup{}
	for i := range out.Jobs {
		j := &out.Jobs[i]
		jobOpts := fioOptionStrings(j.Options)
		canon, _ := json.Marshal(jobOpts) // map keys are sorted: a stable key
		key := fmt.Sprintf("%d\x00%s\x00%s", j.GroupID, j.Name, canon)
		g, ok := byKey[key]
		if !ok {
			opts := make(map[string]string, len(global)+len(jobOpts))
			for k, v := range global {
				opts[k] = v
			}
			for k, v := range jobOpts {
				opts[k] = v
			}
			g = &fioJobGroup{name: j.Name, groupID: j.GroupID, opts: opts}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.entries = append(g.entries, j)
	}
	return groups
}

// runTimes are the start and end of the fio run in RFC 3339, or empty when
// the report has no timestamp.
func (out *fioOutput) runTimes() (started, finished string) {
	if out.Timestamp <= 0 {
		return "", ""
	}
	var elapsed int64
	for _, j := range out.Jobs {
		elapsed = max(elapsed, j.Elapsed)
	}
	end := time.Unix(out.Timestamp, 0).UTC()
	return end.Add(-time.Duration(elapsed) * time.Second).Format(time.RFC3339), end.Format(time.RFC3339)
}

// fioTarget is the file or device every job ran on, or an empty path when
// they ran on different ones.
func fioTarget(groups []*fioJobGroup) results.TargetInfo {
	target := results.TargetInfo{Path: groups[0].opts["filename"], Kind: "file"}
	for _, g := range groups[1:] {
		if g.opts["filename"] != target.Path {
			target.Path = ""
		}
	}
	if strings.HasPrefix(target.Path, "/dev/") {
		target.Kind = "block"
	}
	return target
}

// fioResults maps each job to a result, and each job that cannot be mapped,
// or whose pattern an earlier job already took, to a problem.
func fioResults(groups []*fioJobGroup) ([]results.Result, []Problem) {
	inGroup := map[int][]*fioJobGroup{}
	for _, g := range groups {
		inGroup[g.groupID] = append(inGroup[g.groupID], g)
	}
	mapped := []results.Result{} // a document with no result lists none, not null
	var problems []Problem
	mappedFrom := map[string]string{} // result name -> fio job
	for _, g := range groups {
		res, reason := g.result(inGroup[g.groupID])
		if reason == "" {
			if other, dup := mappedFrom[res.Name]; dup {
				reason = fmt.Sprintf("maps to pattern %s like fio job %q, which is imported", res.Name, other)
			}
		}
		if reason != "" {
			problems = append(problems, Problem{Job: g.name, Reason: reason})
			continue
		}
		mappedFrom[res.Name] = g.name
		mapped = append(mapped, res)
	}
	return mapped, problems
}

// result maps the job to a Result, or says why it cannot.
func (g *fioJobGroup) result(sameGroup []*fioJobGroup) (results.Result, string) {
	for _, j := range g.entries {
		if j.Error != 0 {
			return results.Result{}, fmt.Sprintf("fio reported error %d (%v)", j.Error, syscall.Errno(j.Error))
		}
	}
	p, reason := fioPattern(g.opts)
	if reason != "" {
		return results.Result{}, reason
	}
	// group_reporting gives one entry for all threads; otherwise there is
	// one entry per thread. Any other count means entries that cannot be
	// told apart.
	threadsPerEntry := 1
	switch len(g.entries) {
	case p.Jobs:
	case 1:
		threadsPerEntry = p.Jobs
	default:
		return results.Result{}, fmt.Sprintf("%d report entries for numjobs=%d in group %d", len(g.entries), p.Jobs, g.groupID)
	}
	if len(sameGroup) > 1 {
		var others []string
		for _, o := range sameGroup {
			if o != g {
				others = append(others, strconv.Quote(o.name))
			}
		}
		return results.Result{}, fmt.Sprintf("ran concurrently with fio job %s in group %d (no stonewall): the IOPS are not this pattern's alone",
			strings.Join(others, ", "), g.groupID)
	}
	// I/Os still in flight when a ramp_time ends complete after fio has
	// reset its counters: their bytes are counted, the I/Os are not.
	var rampCarry uint64
	if strings.ContainsAny(g.opts["ramp_time"], "123456789") {
		rampCarry = uint64(p.QueueDepth * threadsPerEntry)
	}
	for _, j := range g.entries {
		if reason := fioCheckEntry(j, p, rampCarry); reason != "" {
			return results.Result{}, reason
		}
	}

	res := results.Result{
		Name:         p.Name(),
		Pattern:      p,
		TimelineIOPS: []float64{},
		Engine:       fioEngine(g.opts),
	}
	var reads, writes []*fioDir
	var durationMS int64
	for _, j := range g.entries {
		reads = append(reads, j.Read)
		writes = append(writes, j.Write)
		d := max(fioRuntime(j.Read), fioRuntime(j.Write))
		if d == 0 {
			d = j.JobRuntime / int64(threadsPerEntry)
		}
		durationMS = max(durationMS, d)
		res.CPU.UserPct += j.UsrCPU * float64(threadsPerEntry)
		res.CPU.SysPct += j.SysCPU * float64(threadsPerEntry)
	}
	res.DurationNS = durationMS * int64(time.Millisecond)
	res.Read = fioSumDir(reads, uint64(p.BlockSize))
	res.Write = fioSumDir(writes, uint64(p.BlockSize))
	res.Syncs = fioSyncs(p, g.entries)
	res.Total = results.Total{
		IOs:     res.Read.IOs + res.Write.IOs,
		Bytes:   res.Read.Bytes + res.Write.Bytes,
		IOPS:    res.Read.IOPS + res.Write.IOPS,
		MiBPerS: res.Read.MiBPerS + res.Write.MiBPerS,
	}
	return res, ""
}

// fioPattern maps job options to a pattern, or says why it cannot.
func fioPattern(opts map[string]string) (results.Pattern, string) {
	if reason := fioUnsupported(opts); reason != "" {
		return results.Pattern{}, reason
	}
	access, readPct, reason := fioDirection(opts)
	if reason != "" {
		return results.Pattern{}, reason
	}
	blockSize, reason := fioBlockSize(opts)
	if reason != "" {
		return results.Pattern{}, reason
	}
	queueDepth, reason := fioPositiveInt(opts, "iodepth")
	if reason != "" {
		return results.Pattern{}, reason
	}
	jobs, reason := fioPositiveInt(opts, "numjobs")
	if reason != "" {
		return results.Pattern{}, reason
	}
	switch opts["ioengine"] {
	case "", "psync", "sync", "pvsync", "pvsync2", "vsync":
		queueDepth = 1 // one I/O at a time, whatever iodepth says
	}
	p := results.Pattern{Access: access, BlockSize: blockSize, ReadPct: readPct, QueueDepth: queueDepth, Jobs: jobs}
	if p, reason = fioContent(p, opts); reason != "" {
		return results.Pattern{}, reason
	}
	if p, reason = fioMix(p, opts); reason != "" {
		return p, reason
	}
	return fioSync(p, opts)
}

// fioSync adds the job's durable writes: sync=dsync (O_DSYNC) is dsync,
// fdatasync=N and fsync=N a sync after every N-th write, issued once the
// write has completed (fdatasync:N:after, fsync:N:after). fio syncs only a
// job that writes; O_SYNC (sync=1, sync=sync) and more than one of them
// at once are no pattern's.
func fioSync(p results.Pattern, opts map[string]string) (results.Pattern, string) {
	var modes, given []string
	switch v := strings.ToLower(strings.TrimSpace(opts["sync"])); v {
	case "", "0", "none":
	case "dsync":
		modes, given = append(modes, pattern.SyncDsync), append(given, "sync="+opts["sync"])
	default:
		return results.Pattern{}, fmt.Sprintf("sync=%s: O_SYNC writes are not supported (sync=dsync, fdatasync=N and fsync=N are)", opts["sync"])
	}
	for _, k := range []string{pattern.SyncFsync, pattern.SyncFdatasync} {
		v := strings.TrimSpace(opts[k])
		if v == "" || v == "0" {
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return results.Pattern{}, fmt.Sprintf("%s=%s is not a count of writes", k, v)
		}
		// fio issues the sync once the write has completed: the :after form.
		modes, given = append(modes, k+":"+v+":"+pattern.SyncAfter), append(given, k+"="+v)
	}
	if len(modes) == 0 || !p.Writes() {
		return p, ""
	}
	if len(modes) > 1 {
		return results.Pattern{}, strings.Join(given, " with ") + ": a pattern has one durable-write mode"
	}
	q, err := pattern.WithSync(p, modes[0])
	if err != nil {
		return results.Pattern{}, given[0] + ": " + err.Error()
	}
	if pattern.SyncOf(q).OwnSyncs() && q.QueueDepth > 1 {
		return results.Pattern{}, fmt.Sprintf("%s with iodepth=%d: iomatrix syncs after a stream's one write in flight (iodepth=1)", given[0], q.QueueDepth)
	}
	return q, ""
}

// fioContent adds the data the job's writes carry: the percentages of
// buffer_compress_percentage and dedupe_percentage, which mean the same
// in a pattern. A job that only reads writes nothing: fio ignores them
// there.
func fioContent(p results.Pattern, opts map[string]string) (results.Pattern, string) {
	for _, o := range []struct {
		name string
		into *int
	}{{"buffer_compress_percentage", &p.Compress}, {"dedupe_percentage", &p.Dedupe}} {
		v, ok := opts[o.name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 100 {
			return p, fmt.Sprintf("%s=%s: not a percentage from 0 to 100", o.name, v)
		}
		*o.into = n
	}
	if p.Compress > 0 && strings.TrimSpace(opts["buffer_pattern"]) != "" {
		return p, "buffer_pattern=" + opts["buffer_pattern"] + ": compressible data of a pattern other than zeros is not supported"
	}
	if !p.Writes() {
		p.Compress, p.Dedupe = 0, 0
	}
	return p, ""
}

// fioMix adds the job's block-size mix and offset distribution, which
// take the same syntax in fio as in a pattern; fio's default word for
// uniform offsets, random, is the pattern's uniform.
func fioMix(p results.Pattern, opts map[string]string) (results.Pattern, string) {
	var err error
	if v, ok := opts["bssplit"]; ok && strings.TrimSpace(v) != "" {
		if p, err = pattern.WithBSSplit(p, v); err != nil {
			return results.Pattern{}, fmt.Sprintf("bssplit=%s: %s", v, strings.TrimPrefix(err.Error(), pattern.ErrBadMix.Error()+": "))
		}
	}
	if v, ok := opts["random_distribution"]; ok {
		if p, err = pattern.WithDistribution(p, v); err != nil {
			return results.Pattern{}, fmt.Sprintf("random_distribution=%s: %s", v, strings.TrimPrefix(err.Error(), pattern.ErrBadMix.Error()+": "))
		}
		if p.Distribution != "" && p.Access != results.Random {
			p.Distribution = "" // fio skews random offsets only
		}
	}
	return p, ""
}

// fioUnsupported says which option makes the job something other than a
// plain O_DIRECT pattern, if any does.
func fioUnsupported(opts map[string]string) string {
	for _, opt := range fioUnsupportedOptions {
		v, ok := opts[opt.name]
		if ok && !slices.Contains(opt.neutral, strings.ToLower(strings.TrimSpace(v))) {
			return fmt.Sprintf("%s=%s: %s", opt.name, v, opt.why)
		}
	}
	// NVMe commands on a generic device (io_uring_cmd) are direct by
	// nature, with or without direct=1.
	if fioEngine(opts) != "io_uring_cmd" && !fioBool(opts, "direct", false) && fioBool(opts, "buffered", true) {
		return "buffered I/O (direct=1 not set): iomatrix patterns are O_DIRECT"
	}
	return ""
}

// fioDirection reads rw and, for a mixed job, its read share.
func fioDirection(opts map[string]string) (results.Access, int, string) {
	rw := strings.TrimSpace(opts["rw"])
	if rw == "" {
		rw = "read" // fio's default
	}
	switch rw {
	case "read":
		return results.Sequential, 100, ""
	case "write":
		return results.Sequential, 0, ""
	case "rw", "readwrite":
		readPct, reason := fioReadMix(opts)
		return results.Sequential, readPct, reason
	case "randread":
		return results.Random, 100, ""
	case "randwrite":
		return results.Random, 0, ""
	case "randrw":
		readPct, reason := fioReadMix(opts)
		return results.Random, readPct, reason
	case "trim", "randtrim", "trimwrite", "randtrimwrite":
		return "", 0, fmt.Sprintf("rw=%s: trim is not an iomatrix pattern", rw)
	}
	if strings.Contains(rw, ":") {
		return "", 0, fmt.Sprintf("rw=%s: offset modifiers are not supported", rw)
	}
	return "", 0, fmt.Sprintf("rw=%s is not a known fio pattern", rw)
}

// fioBlockSize reads bs, refusing the forms that give reads and writes, or
// successive I/Os, different sizes.
func fioBlockSize(opts map[string]string) (int64, string) {
	bs, ok := opts["bs"]
	if !ok {
		return 4096, "" // fio's default
	}
	if strings.ContainsAny(bs, ",:") {
		return 0, fmt.Sprintf("bs=%s: separate read/write block sizes are not supported", bs)
	}
	if strings.Contains(bs, "-") {
		return 0, fmt.Sprintf("bs=%s: block size ranges are not supported", bs)
	}
	n, err := units.ParseSize(bs)
	if err != nil || n <= 0 {
		return 0, fmt.Sprintf("bs=%s is not a block size", bs)
	}
	return n, ""
}

// fioUnsupportedOptions change what a job measures in ways a pattern cannot
// express. neutral lists the values that leave the job a plain pattern.
var fioUnsupportedOptions = []struct {
	name    string
	neutral []string
	why     string
}{
	{"bsrange", nil, "block size ranges are not supported"},
	{"zonemode", []string{"none"}, "zoned I/O is not supported"},
	{"zonesize", []string{"0"}, "zoned I/O is not supported"},
	{"zonerange", []string{"0"}, "zoned I/O is not supported"},
	{"zoneskip", []string{"0"}, "zoned I/O is not supported"},
	{"verify_only", []string{"0"}, "verification runs are not supported"},
	// Data that compresses or repeats is a pattern's (fioContent) as fio
	// makes it by default: zeros after each 512-byte chunk's random part,
	// a repeat of an earlier buffer.
	{"buffer_compress_chunk", []string{"512"}, "compressible chunks of another size than 512 bytes are not supported"},
	{"dedupe_mode", []string{"repeat"}, "only dedupe_mode=repeat is supported"},
	{"percentage_random", []string{"100", "100,100", "100,100,100"}, "partly sequential random I/O is not supported"},
	{"rate", []string{"0", "0,0", "0,0,0"}, "a rate-limited job does not measure the disk"},
	{"rate_iops", []string{"0", "0,0", "0,0,0"}, "a rate-limited job does not measure the disk"},
	{"thinktime", []string{"0"}, "think time lowers the IOPS below the disk's"},
	{"unified_rw_reporting", []string{"0", "none", "2", "both"}, "reads and writes are reported together"},
	{"kb_base", []string{"1024"}, "sizes in powers of 1000 are not supported"},
	// Data that compresses or repeats is a pattern's (see fioContent), and
	// so are durable writes (see fioSync).
}

func fioReadMix(opts map[string]string) (int, string) {
	parse := func(key string) (int, bool, string) {
		v, ok := opts[key]
		if !ok {
			return 0, false, ""
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), "%"))
		if err != nil || n < 0 || n > 100 {
			return 0, true, fmt.Sprintf("%s=%s is not a percentage", key, v)
		}
		return n, true, ""
	}
	read, hasRead, reason := parse("rwmixread")
	if reason != "" {
		return 0, reason
	}
	write, hasWrite, reason := parse("rwmixwrite")
	if reason != "" {
		return 0, reason
	}
	switch {
	case hasRead && hasWrite && read+write != 100:
		return 0, fmt.Sprintf("rwmixread=%d and rwmixwrite=%d disagree", read, write)
	case hasRead:
		return read, ""
	case hasWrite:
		return 100 - write, ""
	default:
		return 50, "" // fio's default mix
	}
}

// fioPositiveInt reads a count whose fio default is 1.
func fioPositiveInt(opts map[string]string, key string) (int, string) {
	v, ok := opts[key]
	if !ok {
		return 1, ""
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Sprintf("%s=%s is not a positive whole number", key, v)
	}
	return n, ""
}

// fioCheckEntry catches reports whose numbers contradict the options:
// verify phases, or group_reporting over job sections that differ in
// direction or block size (fio then shows the options of only one of them).
// Up to carry I/Os' worth of bytes beyond the I/Os counted are those of
// the I/Os in flight at the end of a ramp.
func fioCheckEntry(j *fioJob, p results.Pattern, carry uint64) string {
	if j.Read == nil && j.Write == nil {
		return "no read or write statistics"
	}
	if j.Trim != nil && j.Trim.TotalIOs > 0 {
		return units.Count(j.Trim.TotalIOs, "trim") + " reported"
	}
	if p.ReadPct == 0 && j.Read != nil && j.Read.TotalIOs > 0 {
		return units.Count(j.Read.TotalIOs, "read") + " reported for a write-only job"
	}
	if p.ReadPct == 100 && j.Write != nil && j.Write.TotalIOs > 0 {
		return units.Count(j.Write.TotalIOs, "write") + " reported for a read-only job"
	}
	for _, d := range []struct {
		name string
		dir  *fioDir
	}{{"read", j.Read}, {"write", j.Write}} {
		if d.dir == nil || d.dir.ShortIOs > 0 || d.dir.TotalIOs == 0 {
			continue
		}
		if p.BSSplit != "" {
			// A mix's bytes lie between all its I/Os at its smallest size
			// and all, with the carried ones, at its largest.
			b, _ := pattern.ParseBSSplit(p.BSSplit)
			sizes := b.Sizes()
			lo, hi := d.dir.TotalIOs*uint64(sizes[0]), (d.dir.TotalIOs+carry)*uint64(sizes[len(sizes)-1])
			if d.dir.IOBytes < lo || d.dir.IOBytes > hi {
				return fmt.Sprintf("%s of %d bytes do not fit bssplit=%s", units.Count(d.dir.TotalIOs, d.name), d.dir.IOBytes, p.BSSplit)
			}
			continue
		}
		bs, counted := uint64(p.BlockSize), d.dir.TotalIOs*uint64(p.BlockSize)
		if extra := d.dir.IOBytes - counted; d.dir.IOBytes < counted || extra%bs != 0 || extra/bs > carry {
			verb := "do"
			if d.dir.TotalIOs == 1 {
				verb = "does"
			}
			return fmt.Sprintf("%s of %d bytes %s not match bs=%d", units.Count(d.dir.TotalIOs, d.name), d.dir.IOBytes, verb, p.BlockSize)
		}
	}
	return ""
}

func fioRuntime(d *fioDir) int64 {
	if d == nil {
		return 0
	}
	return d.Runtime
}

// fioSumDir sums a direction's entries. Bytes and bandwidth are those of
// the measured window, as fio's I/O count and IOPS are: fio's io_bytes,
// io_kbytes and bw_bytes also hold the bytes of the I/Os in flight when a
// ramp_time ended (fioCheckEntry bounds them), which are not in its count.
func fioSumDir(dirs []*fioDir, bs uint64) results.DirStats {
	var s results.DirStats
	var clats []*fioClat
	for _, d := range dirs {
		if d == nil {
			continue
		}
		window := d.IOBytes
		if counted := d.TotalIOs * bs; d.ShortIOs == 0 && counted <= d.IOBytes {
			window = counted // short I/Os aside, every counted I/O moved bs
		}
		s.IOs += d.TotalIOs
		s.Bytes += window
		s.IOPS += d.IOPS
		bw := float64(d.BW) * 1024 // KiB/s before fio 3
		if d.BWBytes != nil {
			bw = float64(*d.BWBytes)
		}
		if d.IOBytes > 0 {
			bw *= float64(window) / float64(d.IOBytes)
		}
		s.MiBPerS += bw / (1 << 20)
		if d.Clat != nil && d.Clat.N > 0 {
			clats = append(clats, d.Clat)
		}
	}
	s.LatNS = fioLatency(clats)
	return s
}

// fioSyncs is the result's Syncs: the syncs fio issued (each completed,
// as fio counts only those) and their latency; nil for a pattern without
// syncs of its own.
func fioSyncs(p results.Pattern, entries []*fioJob) *results.SyncStats {
	if !pattern.SyncOf(p).OwnSyncs() {
		return nil
	}
	s := &results.SyncStats{}
	var lats []*fioClat
	for _, j := range entries {
		if j.Sync == nil {
			continue
		}
		// fio 3.33 leaves the sync's total_ios 0 and counts them in
		// lat_ns's N.
		n := j.Sync.TotalIOs
		if j.Sync.Lat != nil && j.Sync.Lat.N > 0 {
			lats = append(lats, j.Sync.Lat)
			n = max(n, j.Sync.Lat.N)
		}
		s.Submitted += n
	}
	s.Completed = s.Submitted
	s.LatNS = fioLatency(lats)
	return s
}

// fioPercentiles are the iomatrix percentiles, in Latency field order.
var fioPercentiles = []float64{50, 90, 99, 99.9, 99.99}

func fioLatency(clats []*fioClat) results.Latency {
	var l results.Latency
	switch len(clats) {
	case 0:
		return l
	case 1:
		c := clats[0]
		l = results.Latency{Min: c.Min, Mean: c.Mean, Max: c.Max, Count: c.N}
		fioSetPercentiles(&l, fioReportedPercentiles(c.Percentile))
		l.MarkConfidence(c.N)
		l.Hist = fioHistogram(clats, l)
		return l
	}
	var n uint64
	var weighted float64
	l.Min = clats[0].Min
	for _, c := range clats {
		l.Min = min(l.Min, c.Min)
		l.Max = max(l.Max, c.Max)
		n += c.N
		weighted += c.Mean * float64(c.N)
	}
	l.Mean = weighted / float64(n)
	l.Count = n
	fioSetPercentiles(&l, fioMergedPercentiles(clats, n))
	l.MarkConfidence(n)
	l.Hist = fioHistogram(clats, l)
	return l
}

// fioHistogram is the threads' json+ bins as one histogram in compact
// form: fio's buckets are iomatrix's (internal/hist), and a bin's key is
// the value of its bucket, which falls in that bucket. The sum is fio's
// mean times the count, to the nearest ns. nil without bins in every
// thread, or when the bins do not hold the summary's count, min and max:
// fio counts every value beyond its last bucket (about 17 s) in it.
func fioHistogram(clats []*fioClat, l results.Latency) *hist.Compact {
	counts := map[int]uint64{}
	var sum float64
	for _, c := range clats {
		if len(c.Bins) == 0 {
			return nil
		}
		for k, v := range c.Bins {
			val, err := strconv.ParseUint(k, 10, 64)
			if err != nil || val > hist.MaxValue {
				return nil
			}
			counts[hist.Index(val)] += v
		}
		sum += c.Mean * float64(c.N)
	}
	h, err := hist.FromCounts(counts, uint64(math.Round(sum)), l.Min, l.Max)
	if err != nil || h.Count() != l.Count {
		return nil
	}
	return h.Compact()
}

func fioSetPercentiles(l *results.Latency, pct []uint64) {
	if pct != nil {
		l.P50, l.P90, l.P99, l.P999, l.P9999 = pct[0], pct[1], pct[2], pct[3], pct[4]
	}
}

// fioReportedPercentiles picks the iomatrix percentiles out of fio's list;
// keys are formatted with %f, so they are matched as numbers. Missing ones
// stay 0.
func fioReportedPercentiles(m map[string]uint64) []uint64 {
	out := make([]uint64, len(fioPercentiles))
	for k, v := range m {
		f, err := strconv.ParseFloat(k, 64)
		if err != nil {
			continue
		}
		for i, want := range fioPercentiles {
			if math.Abs(f-want) < 1e-6 {
				out[i] = v
			}
		}
	}
	return out
}

// fioMergedPercentiles recomputes percentiles over several threads from
// json+ bins the way fio does for group_reporting: the value of the first
// bin at which the cumulative count reaches p % of the samples. Without bins
// in every thread it returns nil.
func fioMergedPercentiles(clats []*fioClat, n uint64) []uint64 {
	counts := map[uint64]uint64{}
	for _, c := range clats {
		if len(c.Bins) == 0 {
			return nil
		}
		for k, v := range c.Bins {
			val, err := strconv.ParseUint(k, 10, 64)
			if err != nil {
				return nil
			}
			counts[val] += v
		}
	}
	vals := make([]uint64, 0, len(counts))
	for v := range counts {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	out := make([]uint64, len(fioPercentiles))
	for i, p := range fioPercentiles {
		need := p / 100 * float64(n)
		var sum uint64
		for _, v := range vals {
			sum += counts[v]
			if float64(sum) >= need {
				out[i] = v
				break
			}
		}
	}
	return out
}

// fioEngine is the job's ioengine; psync is fio's default on Linux since 2.10.
func fioEngine(opts map[string]string) string {
	if e := strings.TrimSpace(opts["ioengine"]); e != "" {
		return e
	}
	return "psync"
}

// fioBool reads a fio boolean option, which fio accepts as 0/1 or words.
func fioBool(opts map[string]string, key string, def bool) bool {
	v, ok := opts[key]
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	return def
}

// fioOptionStrings normalises option values: fio writes strings, but a
// hand-edited file may hold numbers.
func fioOptionStrings(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(v)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

// Convert imports fio's JSON output from files (ImportFiles) and writes
// the results document whole to w or, when out is a file name, atomically
// to out (results.WriteOut), telling notice of every fio job it could not
// import and of the file written. An output file that could not be saved
// is bad input, refused before any file is read.
func Convert(w io.Writer, files []string, out string, notice func(string)) error {
	if err := results.CheckSavable(out); err != nil {
		return fault.Input("out", "%w", err)
	}
	doc, err := ImportFiles(files, func(name string, p Problem) { notice(fmt.Sprintf("%s: not imported: %s", name, p)) })
	if err != nil {
		return err
	}
	if len(doc.Results) == 0 {
		return fmt.Errorf("nothing imported from %v: no fio job could be mapped to a pattern", files)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err == nil {
		err = results.WriteOut(w, out, append(data, '\n'))
	}
	if err != nil || out == "" {
		return err
	}
	notice(fmt.Sprintf("%s from %s written to %s", units.Count(len(doc.Results), "result"), units.Count(len(files), "file"), out))
	return nil
}

// ImportFiles imports fio's JSON output from each file and merges the
// results (Import, Merge), telling notice of each job that could not be
// imported. Bad input (a file that cannot be opened, is not fio's output,
// or whose patterns clash with another's) is a fault.InputError.
func ImportFiles(names []string, notice func(file string, p Problem)) (*results.Document, error) {
	var docs []*results.Document
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, fault.AsInput(err)
		}
		doc, problems, err := Import(name, f)
		f.Close()
		if errors.Is(err, ErrNotFio) || errors.Is(err, ErrBadFigure) {
			return nil, fault.AsInput(err)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range problems {
			notice(name, p)
		}
		docs = append(docs, doc)
	}
	doc, err := Merge(docs)
	return doc, fault.AsInput(err)
}
