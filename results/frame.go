package results

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Frames carry a sweep's progress and its results document through a log
// that other lines share, such as a pod's log, where the container's
// stdout and stderr are interleaved line by line, a runtime may split long
// lines, and a restarted container prints again. Every frame is one line
// holding the frame prefix (anything before the prefix, such as a log
// timestamp, is ignored):
//
//	iomatrix-frame/1 progress {"done":3,"total":9,"pattern":"rand-4k-r100-qd1","iops":1234.5}
//	iomatrix-frame/1 doc 0 2 <base64 of the JSON document's first 3 KiB>
//	iomatrix-frame/1 doc 1 2 <base64 of the rest>
//	iomatrix-frame/1 end 2 <bytes> <sha256 of the JSON document>
//
// The chunks keep every line far below the 16 KiB at which container
// runtimes split lines, and the end frame's length and checksum prove
// that no chunk was lost, reordered or mixed with another line.
const framePrefix = "iomatrix-frame/1 "

// frameChunk is the bytes of JSON per doc frame (4 KiB of base64).
const frameChunk = 3072

// FrameProgress is one finished pattern of a sweep, as a progress frame
// tells it.
type FrameProgress struct {
	Done    int     `json:"done"`
	Total   int     `json:"total"`
	Pattern string  `json:"pattern"`
	IOPS    float64 `json:"iops"`
}

// WriteProgressFrame writes one progress frame.
func WriteProgressFrame(w io.Writer, p FrameProgress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%sprogress %s\n", framePrefix, b)
	return err
}

// WriteDocumentFrames writes d as doc frames and their end frame, in one
// write so that a writer shared with other goroutines keeps them together.
func WriteDocumentFrames(w io.Writer, d *Document) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode the results document: %w", err)
	}
	n := (len(data) + frameChunk - 1) / frameChunk
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		chunk := data[i*frameChunk : min((i+1)*frameChunk, len(data))]
		fmt.Fprintf(&buf, "%sdoc %d %d %s\n", framePrefix, i, n, base64.StdEncoding.EncodeToString(chunk))
	}
	sum := sha256.Sum256(data)
	fmt.Fprintf(&buf, "%send %d %d %s\n", framePrefix, n, len(data), hex.EncodeToString(sum[:]))
	_, err = w.Write(buf.Bytes())
	return err
}

// ErrNoFrames is returned by ReadFrames for a log without a results
// document: the sweep never got to its end, or was not run with framing.
var ErrNoFrames = errors.New("no results document in the log")

// Frames is what a log's frames say.
type Frames struct {
	// Progress is the last progress frame, nil before the first.
	Progress *FrameProgress
	// Document is the last complete results document, nil when none.
	Document *Document
}

// ReadFrames reads the frames of a log. A document counts only when all
// its chunks and its end frame arrived and the checksum holds; the last
// such document wins (a restarted container prints its own). A document
// whose frames are damaged is an error saying what is wrong; a log with
// progress but no document returns the progress and ErrNoFrames.
func ReadFrames(r io.Reader) (Frames, error) {
	var (
		f       Frames
		chunks  []string // of the document being read
		damaged error    // of the last document begun
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		i := strings.Index(text, framePrefix)
		if i < 0 {
			continue
		}
		kind, rest, _ := strings.Cut(text[i+len(framePrefix):], " ")
		switch kind {
		case "progress":
			var p FrameProgress
			if err := json.Unmarshal([]byte(rest), &p); err == nil {
				f.Progress = &p
			}
		case "doc":
			idx, n, payload, err := parseDocFrame(rest)
			if err != nil {
				damaged = fmt.Errorf("log line %d: %w", line, err)
				chunks = nil
				continue
			}
			if idx == 0 {
				chunks, damaged = make([]string, n), nil
			}
			if chunks == nil || len(chunks) != n || chunks[idx] != "" {
				damaged = fmt.Errorf("log line %d: chunk %d of %d out of order", line, idx+1, n)
				chunks = nil
				continue
			}
			chunks[idx] = payload
		case "end":
			d, err := endDocument(rest, chunks, damaged)
			chunks = nil
			if err != nil {
				damaged = fmt.Errorf("log line %d: %w", line, err)
				continue
			}
			f.Document, damaged = d, nil
		}
	}
	if err := sc.Err(); err != nil {
		return f, fmt.Errorf("read the log: %w", err)
	}
	switch {
	case damaged != nil:
		return f, fmt.Errorf("the results document in the log is damaged: %w", damaged)
	case chunks != nil:
		return f, fmt.Errorf("the results document in the log is incomplete: it ends before its end frame")
	case f.Document == nil:
		return f, ErrNoFrames
	}
	return f, nil
}

func parseDocFrame(rest string) (idx, n int, payload string, err error) {
	fields := strings.Fields(rest)
	if len(fields) != 3 {
		return 0, 0, "", fmt.Errorf("doc frame with %d fields, want 3", len(fields))
	}
	idx, err1 := strconv.Atoi(fields[0])
	n, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil || n < 1 || n > 1<<20 || idx < 0 || idx >= n {
		return 0, 0, "", fmt.Errorf("doc frame numbered %q of %q", fields[0], fields[1])
	}
	return idx, n, fields[2], nil
}

// endDocument checks the chunks against the end frame and decodes them.
func endDocument(rest string, chunks []string, damaged error) (*Document, error) {
	if damaged != nil {
		return nil, damaged
	}
	fields := strings.Fields(rest)
	if len(fields) != 3 {
		return nil, fmt.Errorf("end frame with %d fields, want 3", len(fields))
	}
	n, err1 := strconv.Atoi(fields[0])
	size, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("end frame %q", rest)
	}
	if chunks == nil || len(chunks) != n {
		return nil, fmt.Errorf("end frame for %d chunks without them", n)
	}
	var data []byte
	for i, c := range chunks {
		if c == "" {
			return nil, fmt.Errorf("chunk %d of %d missing", i+1, n)
		}
		b, err := base64.StdEncoding.DecodeString(c)
		if err != nil {
			return nil, fmt.Errorf("chunk %d of %d: %w", i+1, n, err)
		}
		data = append(data, b...)
	}
	sum := sha256.Sum256(data)
	if len(data) != size || hex.EncodeToString(sum[:]) != fields[2] {
		return nil, fmt.Errorf("checksum or length mismatch (%d bytes, %d announced)", len(data), size)
	}
	return ReadDocument(bytes.NewReader(data))
}
