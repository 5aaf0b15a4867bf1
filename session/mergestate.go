package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/results"
)

// mergesState is a disk's nomerges as a sweep set it: what to put back,
// and who set it. It lives in a file while the value is set.
type mergesState struct {
	Disk     string `json:"disk"`
	File     string `json:"file"`
	Previous int    `json:"previous"`
	Set      int    `json:"set"`
	PID      int    `json:"pid"`
}

// ErrMergesHeld is a disk whose nomerges another running iomatrix has
// set: the two would take each other's setting for the disk's own.
var ErrMergesHeld = errors.New("another iomatrix holds the disk's nomerges")

func (m *Merges) statePath() string {
	return filepath.Join(m.stateDir, "nomerges-"+m.disk+".json")
}

// value reads the disk's nomerges; file is its path.
func (m *Merges) value() (int, string, error) {
	s, file, err := m.sys.QueueAttr(m.disk, nomergesAttr)
	if err != nil {
		return 0, file, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, file, fmt.Errorf("%s: %q is not a number", file, s)
	}
	return v, file, nil
}

// set puts the disk's nomerges at asked, after it put back what an
// iomatrix that was killed left, and saved the value to put back.
func (m *Merges) set(asked int) (mergesState, error) {
	if err := m.recover(); err != nil {
		return mergesState{}, err
	}
	prev, file, err := m.value()
	if err != nil {
		return mergesState{}, err
	}
	st := mergesState{Disk: m.disk, File: file, Previous: prev, Set: asked, PID: os.Getpid()}
	if err := m.save(st); err != nil {
		return st, err
	}
	got, _, err := m.sys.SetQueueAttr(m.disk, nomergesAttr, strconv.Itoa(asked))
	if err == nil && got != strconv.Itoa(asked) {
		err = fmt.Errorf("%s reads %s after %d was written", file, got, asked)
	}
	if err != nil {
		m.restore(st)
		return st, fmt.Errorf("set the disk's nomerges for the cell: %w", err)
	}
	return st, nil
}

func (m *Merges) save(st mergesState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.stateDir, 0o755); err != nil {
		return fmt.Errorf("keep the disk's nomerges to put back: %w", err)
	}
	if err := results.WriteBytesAtomic(m.statePath(), append(data, '\n')); err != nil {
		return fmt.Errorf("keep the disk's nomerges to put back: %w", err)
	}
	return nil
}

// restore puts st's previous value back, unless the disk no longer holds
// the value st set: somebody changed it meanwhile, and theirs stays. A
// value it cannot put back stays in the state file, for the next sweep.
func (m *Merges) restore(st mergesState) {
	cur, file, err := m.value()
	if err != nil {
		m.notice(fmt.Sprintf("cannot read %s to put its value %d back: %v (kept in %s; the next sweep on %s puts it back)", file, st.Previous, err, m.statePath(), m.disk))
		return
	}
	if cur != st.Set {
		m.notice(fmt.Sprintf("%s holds %d, not the %d set for the cell: somebody changed it meanwhile, and it stays so (it was %d before)", file, cur, st.Set, st.Previous))
	} else if cur != st.Previous {
		got, _, err := m.sys.SetQueueAttr(m.disk, nomergesAttr, strconv.Itoa(st.Previous))
		if err == nil && got != strconv.Itoa(st.Previous) {
			err = fmt.Errorf("it reads %s", got)
		}
		if err != nil {
			m.notice(fmt.Sprintf("cannot put %s back to %d: %v (kept in %s; the next sweep on %s puts it back)", file, st.Previous, err, m.statePath(), m.disk))
			return
		}
	}
	if err := os.Remove(m.statePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.notice(fmt.Sprintf("%s: %v", m.statePath(), err))
	}
}

// recover puts back the value a state file holds, left by an iomatrix
// that was killed (or by this one, when it could not put it back): the
// value the disk held before any sweep set it.
func (m *Merges) recover() error {
	data, err := os.ReadFile(m.statePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the disk's nomerges to put back: %w", err)
	}
	var st mergesState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("the disk's nomerges to put back: %s: %w", m.statePath(), err)
	}
	if st.PID != os.Getpid() && alive(st.PID) {
		return fmt.Errorf("%w: pid %d set %s to %d (%s)", ErrMergesHeld, st.PID, st.File, st.Set, m.statePath())
	}
	m.notice(fmt.Sprintf("%s was set to %d by iomatrix pid %d, which ended before it put back %d: putting it back first", st.File, st.Set, st.PID, st.Previous))
	m.restore(st)
	return nil
}

// alive tells whether process pid exists.
func alive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
