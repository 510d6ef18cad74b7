package snapshot

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// SectionInfo summarises one section. Bytes counts record payload only.
type SectionInfo struct {
	Kind    uint8
	Name    string
	Records int
	Bytes   int64
}

// Info summarises a whole snapshot. Records is the total record count, Bytes
// the size of the file including framing, Checksum the stored (and verified) CRC-32C.
type Info struct {
	Header   Header
	Sections []SectionInfo
	Records  int
	Bytes    int64
	Checksum uint32
}

// Inspect reads the whole stream, verifying its structure and checksum.
// Empty sections are listed too.
func Inspect(r io.Reader) (Info, error) {
	sr, err := NewReader(r)
	if err != nil {
		return Info{}, err
	}
	for {
		if _, _, _, err = sr.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, io.EOF) {
		return Info{}, err
	}
	return Info{
		Header:   sr.Header(),
		Sections: sr.sections,
		Records:  int(sr.records),
		Bytes:    sr.src.off,
		Checksum: sr.checksum,
	}, nil
}

// WriteTable prints i as a readable summary and a table of sections, for
// `amserver operator snapshot inspect`. Names come from the file and are
// quoted when not plainly printable, so a hostile file cannot garble the terminal.
func (i Info) WriteTable(w io.Writer) error {
	sw := &stickyWriter{w: w}
	tw := tabwriter.NewWriter(sw, 0, 8, 2, ' ', 0)
	created := "-"
	if i.Header.CreatedUnixNano != 0 {
		created = time.Unix(0, i.Header.CreatedUnixNano).UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(tw, "Version\t%d\n", i.Header.Version)
	fmt.Fprintf(tw, "Index\t%d\n", i.Header.Index)
	fmt.Fprintf(tw, "Term\t%d\n", i.Header.Term)
	fmt.Fprintf(tw, "Created\t%s\n", created)
	for _, k := range slices.Sorted(maps.Keys(i.Header.Meta)) {
		fmt.Fprintf(tw, "Meta %s\t%s\n", printable(k), printable(i.Header.Meta[k]))
	}
	fmt.Fprintf(tw, "Records\t%d\n", i.Records)
	fmt.Fprintf(tw, "Size\t%d bytes\n", i.Bytes)
	fmt.Fprintf(tw, "Checksum\t0x%08x (CRC-32C)\n", i.Checksum)
	fmt.Fprintf(tw, "\nKIND\tNAME\tRECORDS\tBYTES\n")
	for _, s := range i.Sections {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\n", s.Kind, printable(s.Name), s.Records, s.Bytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return sw.err
}

// stickyWriter keeps the first write error, because tabwriter emits finished
// blocks from inside Fprintf, whose errors the calls above do not check.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

func printable(s string) string {
	if s == "" || !utf8.ValidString(s) || !isGraphic(s) {
		return strconv.Quote(s)
	}
	return s
}

func isGraphic(s string) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == ' ' {
			return false
		}
	}
	return true
}
