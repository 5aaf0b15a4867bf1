package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
)

// SchemaVersion of the results file. Field names are a contract: add
// fields, never rename.
const SchemaVersion = 1

// Version of the tool, recorded in every results file.
var Version = "0.1.0"

// Document is the results file.
type Document struct {
	SchemaVersion int        `json:"schema_version"`
	Tool          Tool       `json:"tool"`
	StartedAt     string     `json:"started_at"`
	FinishedAt    string     `json:"finished_at"`
	Host          Host       `json:"host"`
	Target        TargetInfo `json:"target"`
	Settings      Settings   `json:"settings"`
	Cap           *Cap       `json:"cap"`
	Results       []Result   `json:"results"`
	// Members is set in a fleet document (iomatrix merge): each member's
	// own results; Results then holds, per cell, the spread across the
	// members that measured it (Result.Fleet).
	Members []Member `json:"members,omitempty"`
	// Rehearsal is set in the document of `fit --rehearse`: a workload's
	// systems run at once, one result per system (named by it).
	Rehearsal *Rehearsal `json:"rehearsal,omitempty"`
	// Sentinels is set on a sweep that watched its device.
	Sentinels *Sentinels `json:"sentinels,omitempty"`
}

// Member is one results document of a fleet.
type Member struct {
	Label    string     `json:"label"`
	Source   string     `json:"source,omitempty"` // the file it was read from
	Host     Host       `json:"host"`
	Target   TargetInfo `json:"target"`
	Settings Settings   `json:"settings"`
	Cap      *Cap       `json:"cap"`
	Results  []Result   `json:"results"`
}

// Spread is one figure of a cell across the members of a fleet that
// measured it, and the caveats any member's figure carried.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	// Approx, FewIOs, Unsettled: some member's figure was approximate,
	// rested on too few I/Os, or came from a window that never converged.
	Approx    bool `json:"approx,omitempty"`
	FewIOs    bool `json:"few_ios,omitempty"`
	Unsettled bool `json:"unsettled,omitempty"`
}

// Fleet is a fleet document's cell: who measured it and the spread of
// each metric (keyed by the report's metric names: "iops", "lat-p99"…).
type Fleet struct {
	Members []string          `json:"members"`
	Metrics map[string]Spread `json:"metrics"`
	// ReadLatNS and WriteLatNS are a direction's latency over all the
	// members as one: the union of their histograms (Union), where every
	// member that did I/O in that direction kept one.
	ReadLatNS  *Latency `json:"read_lat_ns,omitempty"`
	WriteLatNS *Latency `json:"write_lat_ns,omitempty"`
}

// Tool identifies the writer of a results file.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Host describes the machine that ran the patterns.
type Host struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	CPUs     int    `json:"cpus"`
}

// TargetInfo describes what was measured.
type TargetInfo struct {
	Path             string `json:"path"`
	Kind             string `json:"kind"` // "file", "block" or "passthrough" (an NVMe generic device)
	Device           string `json:"device"`
	Disk             string `json:"disk"`
	SizeBytes        int64  `json:"size_bytes"`
	LogicalBlockSize int    `json:"logical_block_size"`
	Rotational       bool   `json:"rotational"`
	Scheduler        string `json:"scheduler"`
	DirectIOAlign    int64  `json:"direct_io_align"`
	Filesystem       string `json:"filesystem,omitempty"`
	// The disk's request limits: an I/O larger than either is split into
	// several requests, each counted (and capped) on its own.
	MaxSectorsKB int64 `json:"max_sectors_kb,omitempty"`
	MaxSegments  int64 `json:"max_segments,omitempty"`
	// NSID is a passthrough target's NVMe namespace id; Disk is then the
	// namespace's block device, and Device its number.
	NSID uint32 `json:"nsid,omitempty"`
}

// ThreadCPU is the CPU time of threads over a cell's whole run (ramp and
// drain included), and the share of one core it is over that time.
type ThreadCPU struct {
	Threads  int     `json:"threads"`
	Seconds  float64 `json:"cpu_s"`
	CorePct  float64 `json:"core_pct"`
	WallSecs float64 `json:"wall_s"`
}

// Settings are the run options recorded in the results file.
type Settings struct {
	Profile string `json:"profile"`
	// ProfileFile is the YAML file of a profile that is not built in.
	ProfileFile string `json:"profile_file,omitempty"`
	Engine      string `json:"engine"`
	// EngineOptions are the ring's modes every cell ran with, comma
	// separated ("poll", "sqpoll", "sqpoll-idle=…", "sqpoll-cpu=N"); none
	// by default.
	EngineOptions string `json:"engine_options,omitempty"`
	RuntimeNS     int64  `json:"runtime_ns"`
	RampNS        int64  `json:"ramp_ns"`
	SizeBytes     int64  `json:"size_bytes"`
	Seed          uint64 `json:"seed"`
	// Auto is set when each window's length was decided by the cell
	// (--runtime auto); RuntimeNS then holds its maximum.
	Auto *AutoSettings `json:"auto,omitempty"`
	// RateSweep is set on a load–latency sweep: what a resumed one
	// keeps.
	RateSweep *RateSweepSettings `json:"rate_sweep,omitempty"`
	// Compress and Dedupe are the data content a sweep gave every
	// writing pattern of its profile (see Pattern): what a resumed one
	// keeps. 0 when not asked.
	Compress int `json:"compress_pct,omitempty"`
	Dedupe   int `json:"dedupe_pct,omitempty"`
	// KeepMerges says the profile's nomerges settings were not applied:
	// every cell ran with the disk's request merging as it was.
	KeepMerges bool `json:"keep_merges,omitempty"`
}

// RateSweepSettings are a load–latency sweep's: the one shape it
// measures (closed-loop, its queue depth also the most in flight of the
// open-loop cells), its loads as written ("10%,20%,1000": shares of the
// shape's closed-loop maximum, or IOPS) and how the I/Os arrive.
type RateSweepSettings struct {
	Shape   Pattern `json:"shape"`
	Rates   string  `json:"rates"`
	Arrival string  `json:"arrival"`
}

// AutoSettings are the bounds and the precision of auto windows.
type AutoSettings struct {
	MinRuntimeNS int64   `json:"min_runtime_ns"`
	MaxRuntimeNS int64   `json:"max_runtime_ns"`
	PrecisionPct float64 `json:"precision_pct"`
}

// Cap is the cgroup limit a run was measured under (0 = no limit), or,
// with Provisioned, the limits a volume is sold with, which cap verify
// --provisioned held it to.
type Cap struct {
	CgroupVersion int    `json:"cgroup_version"`
	Cgroup        string `json:"cgroup"`
	Device        string `json:"device"`
	ReadIOPS      uint64 `json:"read_iops"`
	WriteIOPS     uint64 `json:"write_iops"`
	ReadBPS       uint64 `json:"read_bps"`
	WriteBPS      uint64 `json:"write_bps"`
	// Provisioned: the limits are the volume's own, as its provider
	// advertises them, not a cgroup's (CgroupVersion 0, Cgroup empty):
	// no cgroup was made or joined. IOPS and BPS are limits on reads and
	// writes together, as a cloud volume's are (0 = no limit).
	Provisioned bool   `json:"provisioned,omitempty"`
	IOPS        uint64 `json:"iops,omitempty"`
	BPS         uint64 `json:"bps,omitempty"`
}

// Result is one measured pattern.
type Result struct {
	Name       string   `json:"name"`
	Pattern    Pattern  `json:"pattern"`
	StartedAt  string   `json:"started_at"`
	DurationNS int64    `json:"duration_ns"`
	Read       DirStats `json:"read"`
	Write      DirStats `json:"write"`
	Total      Total    `json:"total"`
	CPU        CPU      `json:"cpu"`
	// CPUWait is how long the threads the window's I/O went through
	// waited for a CPU; absent where the kernel does not say (no
	// schedstat) and in results of versions before it.
	CPUWait      *CPUWait  `json:"cpu_wait,omitempty"`
	Device       DevStats  `json:"device"`
	TimelineIOPS []float64 `json:"timeline_iops"`
	Engine       string    `json:"engine"`
	// EngineOpts are the ring's modes the cell ran with ("poll",
	// "sqpoll", "sqpoll-idle=…", "sqpoll-cpu=N"); none by default.
	EngineOpts []string `json:"engine_options,omitempty"`
	// SubmitThread is the CPU of the kernel's submission threads of an
	// SQPOLL ring, which the process's own figures do not hold: a cell
	// bought with a busy kernel thread says so.
	SubmitThread *ThreadCPU `json:"submit_thread,omitempty"`
	// Buffers is how the I/O buffers lay in physical memory, for block
	// sizes over a page: "contiguous" (small pages, 512 contiguous at a
	// time) or "scattered" (wherever the allocator had pages: the psync
	// engine, a ring that could not register its buffers, transparent
	// huge pages off or none free). A virtio disk's large-block
	// figures are lower with scattered buffers (docs/engine.md, "Buffers").
	// Absent for 4 KiB blocks, and in results of versions before it.
	Buffers string `json:"buffers,omitempty"`
	RampNS  int64  `json:"ramp_ns"`
	// Completed counts every I/O completed, ramp and drain included: the
	// figure to compare with kernel counters for the whole run.
	Completed Counts `json:"completed"`
	// Submitted counts every I/O handed to the kernel; at the end of a run
	// it equals Completed plus Failed: none is lost. The one exception is
	// a run stopped by a failure while the device held requests past the
	// engine's grace: those were given up, neither completed nor failed.
	Submitted Counts `json:"submitted"`
	// Failed counts completions that returned an error (Error is the first).
	Failed Counts `json:"failed"`
	// Reissued counts the I/Os the kernel cancelled on its own before they
	// reached the device (ECANCELED from io_uring's worker threads, which
	// the kernel could not start) and that were issued again, unchanged:
	// each is one submission, its latency counted from its first. Absent
	// when none was.
	Reissued *Counts `json:"reissued,omitempty"`
	// Syncs is set on a result of a pattern with durable writes
	// (Pattern.Sync fdatasync:N or fsync:N): the syncs issued and how
	// they ended.
	Syncs *SyncStats `json:"syncs,omitempty"`
	// CgroupIOs are the kernel's counts for the cgroup over the same span as
	// Completed, when the pattern ran under a cap.
	CgroupIOs *Counts `json:"cgroup_ios,omitempty"`
	// Stop says how the window ended: StopFixed, StopConverged or
	// StopMaxRuntime (empty in files older than the field).
	Stop string `json:"stop,omitempty"`
	// Rounds is the number of whole one-second rounds the stop and CIPct
	// were judged on: the first Rounds seconds of TimelineIOPS.
	Rounds int `json:"rounds,omitempty"`
	// CIPct is the half-width of the 95 % confidence interval of the mean
	// IOPS over those rounds, in % of the mean, allowing for seconds that
	// are not independent; absent when it cannot be told (fewer than two
	// rounds).
	CIPct *float64 `json:"ci_pct,omitempty"`
	// Restarts counts how often an auto window started afresh after a
	// step in its rounds; what came before the last start was ramp
	// (RampNS includes it).
	Restarts int `json:"restarts,omitempty"`
	// SizeMix is set on a result of a block-size mix: the I/Os of each
	// size completed in the window, smallest size first.
	SizeMix []SizeCount `json:"size_mix,omitempty"`
	// HotSet is set on a result of a skewed distribution: the share of
	// the window's I/Os that fell in the distribution's hottest blocks.
	HotSet []HotShare `json:"hot_set,omitempty"`
	// Rate is set on an open-loop result (Pattern.Rate).
	Rate     *RateStats `json:"rate,omitempty"`
	CapCheck *CapCheck  `json:"cap_check,omitempty"`
	Error    *IOError   `json:"error,omitempty"`
	// Fleet is set on the cells of a fleet document.
	Fleet *Fleet `json:"fleet,omitempty"`
	// LatLog is set when the run wrote a latency log.
	LatLog *LatLogStats `json:"lat_log,omitempty"`

	// Replay is set on the result of a replayed trace (iomatrix
	// replay): Pattern then sums the trace up (its read share, largest
	// I/O, mean rate, and the most in flight).
	Replay *Replay `json:"replay,omitempty"`
	// Nomerges is set on a cell whose profile asks for a nomerges
	// setting of the disk's queue (the iocost profile's 4K cells).
	Nomerges *Nomerges `json:"nomerges,omitempty"`
	// DeviceChanged is set on a cell of a sweep whose sentinels found the
	// device changed when, or around when, it was measured.
	DeviceChanged *DeviceChange `json:"device_changed,omitempty"`
	// Bursting is set on a cell of a sweep told its volume's burst (sweep
	// --burst) that was measured while a sentinel found the volume above
	// its baseline: a figure of the burst, not of what the volume
	// sustains.
	Bursting *BurstingMark `json:"bursting,omitempty"`
}

// SyncStats counts the syncs of a pattern with durable writes. Each sync
// is issued after its stream's N-th write and its wait is part of that
// write's latency (DirStats.LatNS); LatNS is the sync's own share: from
// the write's completion to the sync's, in the window.
type SyncStats struct {
	// Submitted, Completed and Failed count over the whole run, ramp and
	// drain included, as Result.Submitted does. A sync linked after a
	// write that failed is cancelled with it: it counts as submitted only
	// (the write's failure is the one counted).
	Submitted uint64  `json:"submitted"`
	Completed uint64  `json:"completed"`
	Failed    uint64  `json:"failed"`
	LatNS     Latency `json:"lat_ns"`
}

// Nomerges is the request merging of the disk's queue while a cell ran:
// what the profile asked (0 merges, 1 only the simple merges, 2 none),
// and what was in effect, set for the cell and put back after it, or the
// disk's own when the sweep kept it (Settings.KeepMerges).
type Nomerges struct {
	Disk  string `json:"disk"`
	Asked int    `json:"asked"`
	Value int    `json:"value"`
	// Kept says the disk's setting was left as it was.
	Kept bool `json:"kept,omitempty"`
}

// How a result's window ended (Result.Stop).
const (
	StopFixed      = "fixed"       // after the set runtime
	StopConverged  = "converged"   // an auto window, once steady and precise
	StopMaxRuntime = "max-runtime" // an auto window that never was, at its maximum
	StopUntil      = "until"       // an auto window whose caller's condition held (iotest.Auto.Until: a burst's step)
)

// Unsettled tells whether an auto window ended without converging: its
// figures are as precise as CIPct says, not as asked.
func (r Result) Unsettled() bool { return r.Stop == StopMaxRuntime }

// CapCheck is cap verify's judgement of one result: the one record of it,
// decided by capverify.Judge, rendered by report and gathered into a
// CapVerdict.
type CapCheck struct {
	ExpectedIOPS float64 `json:"expected_iops"`
	DeviationPct float64 `json:"deviation_pct"`
	OK           bool    `json:"ok"`
	// Binding is set where the cap model expects less than 90 % of the
	// uncapped IOPS; elsewhere the expectation is the uncapped figure.
	Binding      bool    `json:"binding"`
	UncappedIOPS float64 `json:"uncapped_iops"`
	// ReadShare is the share of reads of the measured window, at which
	// the cap model is taken.
	ReadShare    float64 `json:"read_share"`
	TolerancePct float64 `json:"tolerance_pct"`
	// CarryPct is what a cell that both reads and writes may deviate
	// beyond the tolerance: the throttle's carry-over of one slice of a
	// direction's budget, over the measured window.
	CarryPct float64 `json:"carry_pct,omitempty"`
	// RateOK: the measured IOPS meet the expectation.
	RateOK bool `json:"rate_ok"`
	// CountersOK: the cgroup's kernel counters (CgroupIOs) equal
	// ExpectedRequests within 0.5 %, direction by direction.
	CountersOK bool `json:"counters_ok"`
	// RequestsPerIO is how many block-layer requests one I/O makes;
	// ExpectedRequests is Completed times that. ForeignRequests were
	// charged to the cgroup beyond iomatrix's, MissingRequests issued by
	// iomatrix and not counted by the kernel.
	RequestsPerIO    int    `json:"requests_per_io"`
	ExpectedRequests Counts `json:"expected_requests"`
	ForeignRequests  Counts `json:"foreign_requests"`
	MissingRequests  Counts `json:"missing_requests"`
	// Inconclusive: the cell's rate was not judged, so that it is neither
	// OK nor failed (see capverify.Judge): another process loaded the
	// device while the cell or its baseline was measured and the rate is
	// not the cap model's (OtherLoad), or the cell's wait for a CPU could
	// explain its shortfall (Starved).
	Inconclusive bool `json:"inconclusive,omitempty"`
	OtherLoad    bool `json:"other_load,omitempty"`
	Starved      bool `json:"cpu_starved,omitempty"`
	// CPUWaitPct is the share of the window the cell's I/O may have
	// waited for a CPU (Result.CPUWait), in %; absent when it did not, or
	// where it is not known.
	CPUWaitPct float64 `json:"cpu_wait_pct,omitempty"`
	// Above: a cell measured against a volume's provisioned limits did
	// more than they allow (beyond the tolerance): the volume is bursting
	// (spending credits) or not limited there. Neither OK nor failed.
	Above bool `json:"above,omitempty"`
	// DeeperReached, in a cell short of a volume's provisioned limits,
	// names a cell of the same pattern at a deeper queue that reached
	// them: the limits do not bind at this cell's depth (its latency sets
	// its rate), and the cell holds, not binding.
	DeeperReached string `json:"deeper_reached,omitempty"`
	// Reasons say why a cell does not hold; empty when it does.
	Reasons []string `json:"reasons,omitempty"`
}

// DirStats are the statistics of one direction.
type DirStats struct {
	IOs     uint64  `json:"ios"`
	Bytes   uint64  `json:"bytes"`
	IOPS    float64 `json:"iops"`
	MiBPerS float64 `json:"mib_per_s"`
	LatNS   Latency `json:"lat_ns"`
	// In an open-loop result, the two latencies of each I/O, named
	// apart: service from its submission to its completion (the same
	// figures as LatNS, which is always service time), response from its
	// intended start on the schedule to its completion, including any
	// wait for a free slot. Absent in a closed-loop result.
	ServiceLatNS  *Latency `json:"service_lat_ns,omitempty"`
	ResponseLatNS *Latency `json:"response_lat_ns,omitempty"`
}

// Total sums both directions.
type Total struct {
	IOs     uint64  `json:"ios"`
	Bytes   uint64  `json:"bytes"`
	IOPS    float64 `json:"iops"`
	MiBPerS float64 `json:"mib_per_s"`
	// LatNS summarizes the merged read and write histogram: the latency of
	// the pattern as a whole, which two per-direction summaries cannot give.
	// A pointer so that documents without it (older files, fio imports) can
	// be told apart from a result without I/O.
	LatNS *Latency `json:"lat_ns,omitempty"`
	// ServiceLatNS and ResponseLatNS as in DirStats, both directions merged.
	ServiceLatNS  *Latency `json:"service_lat_ns,omitempty"`
	ResponseLatNS *Latency `json:"response_lat_ns,omitempty"`
}

// RateStats is how an open-loop result kept to its schedule. The window's
// I/Os are those completed inside it, as in every result; the schedule's
// figures count intended starts inside it.
type RateStats struct {
	Arrival    string  `json:"arrival"`
	TargetIOPS float64 `json:"target_iops"`
	// ScheduledIOs is the number of intended starts inside the window,
	// and ScheduledIOPS that over the window: the schedule's own rate,
	// which with poisson arrivals differs from the target by chance
	// (about 1/sqrt(ScheduledIOs)).
	ScheduledIOs  uint64  `json:"scheduled_ios"`
	ScheduledIOPS float64 `json:"scheduled_iops"`
	// AchievedIOPS is the completions inside the window over the window
	// (Total.IOPS).
	AchievedIOPS float64 `json:"achieved_iops"`
	// Sustained: every I/O the window scheduled was issued, and the
	// achieved rate kept to the schedule's (see iotest's rule). A rate
	// the device cannot carry is reported with Sustained false and the
	// backlog it built.
	Sustained bool `json:"sustained"`
	// LatenessNS: from each I/O's intended start to its submission.
	LatenessNS Latency `json:"lateness_ns"`
	// LateIOs of the window's I/Os were submitted more than
	// LateThresholdNS after their intended start; SlotWaits of them found
	// every slot (QueueDepth) busy at their intended start.
	LateIOs         uint64 `json:"late_ios"`
	LateThresholdNS int64  `json:"late_threshold_ns"`
	SlotWaits       uint64 `json:"slot_waits"`
	// MaxBacklog is the most I/Os that were due and not yet issued at
	// once; BacklogAtEnd of them were due inside the window and never
	// issued (the stream goes on issuing the window's I/Os for 100 ms
	// after it ends, then gives up the rest), the oldest BacklogAgeNS
	// late at the window's end.
	MaxBacklog   uint64 `json:"max_backlog"`
	BacklogAtEnd uint64 `json:"backlog_at_end"`
	BacklogAgeNS int64  `json:"backlog_age_ns,omitempty"`
	// MaxAfterIOPS, for a rate set as a share of the pattern's
	// closed-loop maximum (run --rate 80%) that was not sustained, is
	// that maximum measured again right after the open loop: a device
	// whose capacity fell during the run is told from a stream that
	// could not keep up.
	MaxAfterIOPS float64 `json:"max_after_iops,omitempty"`
	// ProfileSteps and ProfileStepNS, when the schedule followed a rate
	// profile (a rehearsal of an observed timeline), are its steps and
	// their length; TargetIOPS is then the profile's mean.
	ProfileSteps  int   `json:"profile_steps,omitempty"`
	ProfileStepNS int64 `json:"profile_step_ns,omitempty"`
}

// CPU is the process's CPU use over the measured window, in percent of one
// CPU (like fio's usr/sys).
type CPU struct {
	UserPct float64 `json:"user_pct"`
	SysPct  float64 `json:"sys_pct"`
	// Switches are the process's context switches in the window,
	// voluntary and not (getrusage's nvcsw + nivcsw): each time one of
	// its threads slept or was preempted. A thread that sleeps for every
	// completion switches once per I/O; an open-loop stream that sleeps
	// until each intended start as well, twice (docs/open-loop.md).
	Switches uint64 `json:"switches,omitempty"`
}

// CPUWait is how long, over a result's measured window, the threads its
// I/O went through waited on a run queue: ready to run while other tasks
// held every CPU they may run on (schedstat's run delay). At QD1 each I/O
// waits for its own thread to run again, and on a loop device for the
// kernel's worker that serves it: where other work holds the CPUs, that
// wait, not the device or a cap, may set the rate
// (docs/engine.md, "CPU wait").
type CPUWait struct {
	// IOThreadsNS is the wait of iomatrix's own I/O threads, summed over
	// IOThreads threads: each stream's thread, and the kernel's workers
	// and submission thread of its ring (io_uring's iou-wrk and iou-sqp
	// threads, which do the I/O of a device that cannot take it without
	// blocking, zram's for one).
	IOThreadsNS int64 `json:"io_threads_ns"`
	IOThreads   int   `json:"io_threads"`
	// TargetThreadsNS is the wait of the kernel's threads that may serve
	// the target, summed over TargetThreads threads: every kernel thread
	// (the loop driver, nbd's receiver and the cap's throttle hand their
	// requests to workqueues, whose workers cannot be told apart by what
	// they served), and the threads of every FUSE daemon where the target
	// is a FUSE file or a loop device over one.
	TargetThreadsNS int64 `json:"target_threads_ns"`
	TargetThreads   int   `json:"target_threads"`
	// RunNS is the CPU time all those threads ran in the window.
	RunNS int64 `json:"run_ns"`
	// OthersNS is the CPU time everything else ran in the window, summed
	// over the CPUs: the machine's busy time (/proc/stat, interrupts and
	// time stolen by a hypervisor included) less RunNS. Absent where the
	// machine's time could not be read.
	//
	// The threads above also wait for each other: a loop device over a
	// file in memory runs its I/O on the CPU, and its workers and the
	// streams' threads queue behind one another, which is the device's
	// own speed, as fast as it goes on this machine's CPUs (its uncapped
	// baseline waited likewise). Only the CPU time others took can have
	// slowed the I/O more than that: the wait that counts is at most
	// OthersNS (see Wait).
	OthersNS *int64 `json:"others_ns,omitempty"`
	// Pct is Wait in percent of the window: the share of the window the
	// I/O may have lost to others' use of the CPUs.
	Pct float64 `json:"pct"`
}

// Wait is the time the window's I/O may have lost to others' use of the
// CPUs: both sums, at most OthersNS where it is known, at most window; 0
// for a result without the figure. Threads that wait at once are summed,
// and a thread may wait behind the run's own, so it can overstate the
// time lost, never understate it.
func (c *CPUWait) Wait(window time.Duration) time.Duration {
	if c == nil {
		return 0
	}
	w := time.Duration(c.IOThreadsNS + c.TargetThreadsNS)
	if c.OthersNS != nil {
		w = min(w, time.Duration(*c.OthersNS))
	}
	return min(w, max(window, 0))
}

// DevStats are the backing disk's own counters over the measured window:
// the whole disk's, every process's I/O included.
type DevStats struct {
	// IOs are the requests the disk completed (/proc/diskstats): an I/O
	// the block layer split counts as several.
	IOs     uint64  `json:"ios"`
	UtilPct float64 `json:"util_pct"`
	// OtherIOs are the disk's requests beyond iomatrix's own in the window
	// (its I/Os times the requests each makes): another process loading
	// the device makes the cell's figures suspect.
	OtherIOs uint64 `json:"other_ios,omitempty"`
	// Bytes the disk read and wrote in the window, and OtherBytes those
	// beyond iomatrix's own: a neighbour's writeback comes in few large
	// requests, so that its load shows in bytes long before it shows in
	// requests.
	Bytes      uint64 `json:"bytes,omitempty"`
	OtherBytes uint64 `json:"other_bytes,omitempty"`
	// Flushes are the flush requests the disk completed in the window
	// (/proc/diskstats, Linux 5.5+): a cache flush a sync or a journal
	// commit sent down.
	Flushes uint64 `json:"flushes,omitempty"`
	// SyncIOs and SyncBytes are the part of OtherIOs and OtherBytes a
	// durable-write cell's syncs explain: a filesystem commits its
	// journal for them (ext4: one to three requests per fdatasync of an
	// O_DIRECT overwrite). Up to a bound per sync (a write, for dsync)
	// they are the cell's own, not another process's load (OtherLoad).
	SyncIOs   uint64 `json:"sync_ios,omitempty"`
	SyncBytes uint64 `json:"sync_bytes,omitempty"`
	// Merges are the requests the disk merged into others in the window
	// (/proc/diskstats' merged reads and writes), absent where the
	// counters were not read: near zero when a cell ran with the disk's
	// merging off (Result.Nomerges).
	Merges *Counts `json:"merges,omitempty"`
	// Uncounted, when set, says why the disk's counters were not read:
	// the kernel does not count the target's I/O there (NVMe passthrough
	// commands), so the figures above are not measured, not zero.
	Uncounted string `json:"uncounted,omitempty"`
}

// Thresholds of OtherLoad: the share of the disk's requests or bytes, and
// the least of each, that make another process's load too large to ignore.
const (
	OtherLoadShare    = 0.2
	OtherLoadMinIOs   = 500
	OtherLoadMinBytes = 16 << 20
)

// OtherLoad reports whether another process loaded the disk in the
// window: beyond the run's own I/O and beyond knownIOs requests and
// knownBytes bytes that are accounted for elsewhere (an aggressor run
// beside it on purpose, say), at least a fifth of the disk's requests (and
// 500) or of its bytes (and 16 MiB) were somebody else's. A figure
// measured then is the device shared, not the device: a rate below what
// was expected proves nothing about the rate asked for.
func (d DevStats) OtherLoad(knownIOs, knownBytes uint64) bool {
	ios := d.OtherIOs - min(knownIOs+d.SyncIOs, d.OtherIOs)
	bytes := d.OtherBytes - min(knownBytes+d.SyncBytes, d.OtherBytes)
	return (ios >= OtherLoadMinIOs && float64(ios) >= OtherLoadShare*float64(d.IOs)) ||
		(bytes >= OtherLoadMinBytes && float64(bytes) >= OtherLoadShare*float64(d.Bytes))
}

// LatLogStats is what a latency log holds: its lines (one per I/O, or
// per period and direction when averaged), and the entries dropped
// because the log's writer fell behind (never an I/O delayed for it).
type LatLogStats struct {
	Lines   uint64 `json:"lines"`
	Dropped uint64 `json:"dropped"`
}

// Counts are I/Os (or requests) by direction: completed, submitted,
// failed, or counted by the kernel for a cgroup.
type Counts struct {
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes"`
}

// NewDocument starts a results document for target t.
func NewDocument(t TargetInfo, s Settings, startedAt string) *Document {
	return &Document{
		SchemaVersion: SchemaVersion,
		Tool:          Tool{Name: "iomatrix", Version: Version},
		StartedAt:     startedAt,
		Host:          HostInfo(),
		Target:        t,
		Settings:      s,
		Results:       []Result{},
	}
}

// HostInfo describes this machine.
func HostInfo() Host {
	h := Host{CPUs: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

// ErrBadDocument marks a results file that cannot be used.
var ErrBadDocument = errors.New("not an iomatrix results file")

// ReadDocument parses a results file. Its errors say what the input is
// instead: not JSON, another tool's JSON (fio's is recognized), or a schema
// from a newer iomatrix.
func ReadDocument(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	kind, err := DocumentKind(data)
	switch {
	case err != nil:
		return nil, err
	case kind == KindObservation:
		return nil, fmt.Errorf("%w: this is an observation (iomatrix observe), not measured cells; %w", ErrBadDocument, fault.NewMention(func(n fault.Namer) string {
			return "render it with `iomatrix report`, or size from it with `iomatrix observe " + n("workload") + "`"
		}))
	case kind == KindBurst:
		return nil, fmt.Errorf("%w: this is a burst measurement (iomatrix burst), not measured cells", ErrBadDocument)
	case kind != "":
		return nil, fmt.Errorf("%w: a document of kind %q, which this iomatrix (%s) does not know", ErrBadDocument, kind, Version)
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	if err := d.checkFigures(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	return &d, nil
}

// checkFigures refuses a measured figure that no measurement gives, a
// negative rate or duration, which every answer would take at its word
// (a negative rate makes any need fit).
func (d *Document) checkFigures() error {
	for i := range d.Results {
		r := &d.Results[i]
		for _, f := range []struct {
			name  string
			value float64
		}{
			{"duration_ns", float64(r.DurationNS)},
			{"read.iops", r.Read.IOPS}, {"read.mib_per_s", r.Read.MiBPerS},
			{"write.iops", r.Write.IOPS}, {"write.mib_per_s", r.Write.MiBPerS},
			{"total.iops", r.Total.IOPS}, {"total.mib_per_s", r.Total.MiBPerS},
		} {
			if f.value < 0 {
				return fmt.Errorf("results[%d] (%s): %s is %g: a measured figure is never negative", i, r.Name, f.name, f.value)
			}
		}
		if err := r.checkHistograms(); err != nil {
			return fmt.Errorf("results[%d] (%s): %w", i, r.Name, err)
		}
	}
	for m := range d.Members {
		for i := range d.Members[m].Results {
			r := &d.Members[m].Results[i]
			if err := r.checkHistograms(); err != nil {
				return fmt.Errorf("members[%d].results[%d] (%s): %w", m, i, r.Name, err)
			}
		}
	}
	for i, r := range d.Results {
		if r.Fleet == nil {
			continue
		}
		for name, l := range map[string]*Latency{"read_lat_ns": r.Fleet.ReadLatNS, "write_lat_ns": r.Fleet.WriteLatNS} {
			if _, err := l.Histogram(); err != nil {
				return fmt.Errorf("results[%d] (%s): fleet.%s.hist: %w", i, r.Name, name, err)
			}
		}
	}
	return nil
}

// ReadDocumentFile reads and parses a results file.
func ReadDocumentFile(path string) (*Document, error) {
	return readFile(path, ReadDocument)
}

// readFile reads a document of iomatrix's from a file; errors name it.
func readFile[T any](path string, read func(io.Reader) (*T, error)) (*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// WriteFileAtomic replaces path with the JSON document (see
// WriteBytesAtomic).
func WriteFileAtomic(path string, d *Document) error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := WriteBytesAtomic(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// WriteBytesAtomic replaces path with data so that a reader, or a crash at
// any moment, sees either the old file or the new one whole: a temporary
// file in the same directory is written, synced and renamed over path,
// then the directory is synced so that the rename itself is durable. It is
// the one writer of every file iomatrix outputs. Its errors are those of
// the failing step, each naming the file it touched.
func WriteBytesAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	// CreateTemp makes the file private (0600), but a results file is a
	// report that others read: it gets 0644, as most tools' output does.
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if df, err := os.Open(dir); err == nil {
		_ = df.Sync()
		df.Close()
	}
	return nil
}

// WriteOut writes data whole to w or, when out is a file name, atomically
// to that file (WriteBytesAtomic): where a command's output goes.
func WriteOut(w io.Writer, out string, data []byte) error {
	if out == "" {
		_, err := w.Write(data)
		return err
	}
	return WriteBytesAtomic(out, data)
}

// RuntimeWords is the runtime setting as the runtime option says it: a
// duration, or auto.
func (s Settings) RuntimeWords() string {
	if s.Auto != nil {
		return "auto"
	}
	return time.Duration(s.RuntimeNS).String()
}

// RemoveStaleTemps deletes the temporary files that a process killed in
// the middle of WriteFileAtomic left beside path.
func RemoveStaleTemps(path string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// Remaining are the patterns of pats that d has no result of, in order:
// all of them for a nil d.
func (d *Document) Remaining(pats []Pattern) []Pattern {
	done := map[string]bool{}
	if d != nil {
		for _, r := range d.Results {
			done[r.Name] = true
		}
	}
	var todo []Pattern
	for _, p := range pats {
		if !done[p.Name()] {
			todo = append(todo, p)
		}
	}
	return todo
}

// ByName are d's results by name.
func (d *Document) ByName() map[string]Result {
	m := make(map[string]Result, len(d.Results))
	for _, r := range d.Results {
		m[r.Name] = r
	}
	return m
}

// ReadResultsFile reads a results file that has results: the input of
// every report. Every problem, an empty one included, is bad input that
// names the file.
func ReadResultsFile(path string) (*Document, error) {
	d, err := ReadDocumentFile(path)
	if err == nil && len(d.Results) == 0 {
		return nil, fault.Input("", "%s: the results list is empty: nothing to report", path)
	}
	return d, fault.AsInput(err)
}
